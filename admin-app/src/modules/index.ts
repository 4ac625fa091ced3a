// The app's modules: the nav and the registry. Each module is its own chunk,
// loaded when first opened; its Module.svelte takes `path`, the route's
// segments after /admin/<name>/. `allowed` says whether the caller's
// permissions let them use it (the nav shows only those; the API still decides).
import type { Component } from 'svelte';

import { can, isAdmin } from '../lib/access.svelte';

export type ModuleProps = { path: string[] };

export type AdminModule = {
	name: string;
	label: string;
	allowed: () => boolean;
	load: () => Promise<{ default: Component<ModuleProps> }>;
};

/** The sections of Users and access, each shown when its collection may be read. */
export const accessSections = [
	{ name: 'users', label: 'Users', collection: 'platform_users' },
	{ name: 'roles', label: 'Roles', collection: 'platform_roles' },
	{ name: 'policies', label: 'Policies', collection: 'platform_policies' },
] as const;

export const modules: AdminModule[] = [
	// Content lists only the collections the caller may read.
	{ name: 'content', label: 'Content', allowed: () => true, load: () => import('./content/Module.svelte') },
	{ name: 'files', label: 'Files', allowed: () => can('platform_files', 'read'), load: () => import('./files/Module.svelte') },
	{
		name: 'access',
		label: 'Users and access',
		allowed: () => accessSections.some((s) => can(s.collection, 'read')),
		load: () => import('./access/Module.svelte'),
	},
	// The platform's routes (/server/extensions, /server/metrics) answer administrators only.
	{ name: 'platform', label: 'Platform', allowed: isAdmin, load: () => import('./platform/Module.svelte') },
];
