// Path-based routing under /admin/: the current path, navigation, links, and
// the unsaved-changes guard (leaving a dirty form asks first).

export const BASE = '/admin/';

const state = $state({ path: location.pathname, search: location.search });

export const route = {
	/** The full path, e.g. /admin/content/videos. */
	get path() {
		return state.path;
	},
	get search() {
		return state.search;
	},
	get query() {
		return new URLSearchParams(state.search);
	},
	/** The segments after /admin/, e.g. ['content', 'videos']. */
	get segments(): string[] {
		const rest = state.path.startsWith(BASE) ? state.path.slice(BASE.length) : '';
		return rest.split('/').filter(Boolean).map(decodeURIComponent);
	},
};

const guards = new Set<() => boolean>();

/** Registers "is there something unsaved?"; returns the unregister function. */
export function guard(isDirty: () => boolean): () => void {
	guards.add(isDirty);
	return () => guards.delete(isDirty);
}

/** True when nothing is unsaved, or the user agrees to lose it. */
export function mayLeave(): boolean {
	for (const dirty of guards) {
		if (dirty()) return window.confirm('You have unsaved changes. Leave this page and lose them?');
	}
	return true;
}

/** A path under /admin/ from segments: href('content', 'videos'). */
export function href(...segments: (string | number)[]): string {
	// `+` (a new item) is literal in a path.
	return BASE + segments.map((s) => encodeURIComponent(String(s)).replace(/%2B/g, '+')).join('/');
}

/** Goes to a path of the app. `force` skips the unsaved-changes guard. */
export function navigate(to: string, opts: { replace?: boolean; force?: boolean } = {}): boolean {
	if (!opts.force && !mayLeave()) return false;
	const url = new URL(to, location.origin);
	if (opts.replace) history.replaceState(null, '', url);
	else history.pushState(null, '', url);
	state.path = url.pathname;
	state.search = url.search;
	return true;
}

addEventListener('popstate', () => {
	if (location.pathname === state.path && location.search === state.search) return;
	if (!mayLeave()) {
		// Stay: put the page we are on back.
		history.pushState(null, '', state.path + state.search);
		return;
	}
	state.path = location.pathname;
	state.search = location.search;
});

addEventListener('beforeunload', (event) => {
	for (const dirty of guards) {
		if (dirty()) {
			event.preventDefault();
			return;
		}
	}
});

// Links to the app's own paths navigate in place (the guard asks first).
addEventListener('click', (event) => {
	if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
	const anchor = (event.target as Element | null)?.closest?.('a');
	if (!anchor || anchor.target || anchor.hasAttribute('download')) return;
	const url = new URL(anchor.href, location.href);
	if (url.origin !== location.origin || !url.pathname.startsWith(BASE)) return;
	event.preventDefault();
	navigate(url.pathname + url.search);
});
