import { svelte } from '@sveltejs/vite-plugin-svelte';
import { defineConfig } from 'vite';

// The host serves the build at /admin/ from example-host/admin-dist (committed,
// embedded in its binary). The build is deterministic: the suite rebuilds it
// from the lockfile and compares it byte for byte.
export default defineConfig({
	base: '/admin/',
	plugins: [svelte()],
	build: {
		outDir: '../example-host/admin-dist',
		emptyOutDir: true,
		target: 'es2022',
		// Modern browsers only: no preload polyfill, no inline script.
		modulePreload: { polyfill: false },
		assetsInlineLimit: 0,
		reportCompressedSize: false,
	},
});
