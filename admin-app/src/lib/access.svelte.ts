// What the signed-in user may do, as the API answers it: `GET /permissions/me`
// (per collection and action: access none, partial or full) and
// `GET /policies/me/globals` (administrator and app access). The app shows
// only what the caller may use; the API still decides each request.
import { readPolicyGlobals, readUserPermissions } from '@directus/sdk';

import { request } from './client';

export type Action = 'create' | 'read' | 'update' | 'delete';
type ActionAccess = { access: 'none' | 'partial' | 'full'; fields?: string[] };
type Globals = { app_access: boolean; admin_access: boolean; enforce_tfa: boolean };

const NONE: Globals = { app_access: false, admin_access: false, enforce_tfa: false };

export const access = $state({
	collections: {} as Record<string, Partial<Record<Action, ActionAccess>>>,
	globals: { ...NONE } as Globals,
});

/** Reads the caller's permissions and policy flags (signed out: none). */
export async function loadAccess(opts: { quiet401?: boolean } = {}): Promise<void> {
	const [collections, globals] = await Promise.all([
		request<typeof access.collections>(readUserPermissions() as never, opts),
		request<Globals>(readPolicyGlobals() as never, opts),
	]);
	access.collections = collections ?? {};
	access.globals = { ...NONE, ...globals };
}

/** Forgets what the last user could do (signed out). */
export function clearAccess() {
	access.collections = {};
	access.globals = { ...NONE };
}

/** Whether the caller may do `action` on some items of `collection`. */
export function can(collection: string, action: Action): boolean {
	if (access.globals.admin_access) return true;
	const level = access.collections[collection]?.[action]?.access;
	return level === 'full' || level === 'partial';
}

/** Whether the caller has administrator access. */
export function isAdmin(): boolean {
	return access.globals.admin_access;
}

/** Whether the caller may do `action` on `field` of `collection`. */
export function canField(collection: string, action: Action, field: string): boolean {
	if (access.globals.admin_access) return true;
	const entry = access.collections[collection]?.[action];
	if (!entry || entry.access === 'none') return false;
	const fields = entry.fields ?? ['*'];
	return fields.includes('*') || fields.includes(field);
}

/**
 * The fields of `wanted` the caller may read on `collection` (a dotted
 * path by its first segment): asking for another answers 403 as a whole.
 */
export function readable<T extends string>(collection: string, wanted: readonly T[]): T[] {
	return wanted.filter((f) => canField(collection, 'read', f.split('.')[0]));
}
