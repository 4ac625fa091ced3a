// The access collections as the host answers them (Directus 11's shapes).
import { messageOf, request } from '../../lib/client';
import { href, navigate } from '../../lib/router.svelte';
import { toast } from '../../lib/toast.svelte';

export type Role = { id: string; name: string; description: string | null; icon?: string | null; parent?: string | null };
export type Policy = {
	id: string;
	name: string;
	description: string | null;
	admin_access: boolean;
	app_access: boolean;
	icon?: string | null;
};
/** A row of platform_access: a policy given to a role or to a user. */
export type Access = { id: string; role: string | null; user: string | null; policy: string; sort?: number | null };
export type Permission = {
	id: string;
	policy: string;
	collection: string;
	action: Action;
	fields: string[] | null;
	permissions: Record<string, unknown> | null;
	validation?: Record<string, unknown> | null;
	presets?: Record<string, unknown> | null;
};
export type Action = 'create' | 'read' | 'update' | 'delete';
export const ACTIONS: Action[] = ['create', 'read', 'update', 'delete'];
export type User = {
	id: string;
	email: string | null;
	first_name: string | null;
	last_name: string | null;
	role: string | null;
	status: string;
};
export const STATUSES = ['active', 'invited', 'draft', 'suspended', 'archived'];

/**
 * Deletes an item of an access page, then leaves for its list: `clean`
 * first marks the form as saved, so that leaving asks nothing.
 */
export async function deleteAndLeave(command: unknown, what: string, list: string, clean: () => void) {
	try {
		await request(command as never);
		clean();
		toast(`${what} deleted`);
		navigate(href('access', list), { force: true });
	} catch (e) {
		toast(messageOf(e), true);
	}
}
