// The app's modules: the nav and the registry. Each module is its own chunk,
// loaded when first opened; its Module.svelte takes `path`, the route's
// segments after /admin/<name>/.
import type { Component } from 'svelte';

export type ModuleProps = { path: string[] };

export type AdminModule = {
	name: string;
	label: string;
	load: () => Promise<{ default: Component<ModuleProps> }>;
};

export const modules: AdminModule[] = [
	{ name: 'content', label: 'Content', load: () => import('./content/Module.svelte') },
	{ name: 'files', label: 'Files', load: () => import('./files/Module.svelte') },
	{ name: 'access', label: 'Users and access', load: () => import('./access/Module.svelte') },
	{ name: 'platform', label: 'Platform', load: () => import('./platform/Module.svelte') },
];
