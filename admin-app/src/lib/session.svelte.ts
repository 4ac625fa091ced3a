// The signed-in user on the host's session cookie: sign-in, sign-out, and a
// 401 on any call → the sign-in page, then back where the user was.
import { readMe } from '@directus/sdk';

import { clearAccess, loadAccess } from './access.svelte';
import { client, onUnauthorized, request, toApiError } from './client';
import { BASE, navigate, route } from './router.svelte';

export type Me = {
	id: string;
	email: string;
	first_name: string | null;
	last_name: string | null;
	role: { id: string; name: string } | null;
};

export const session = $state({
	user: null as Me | null,
	/** The first look at the cookie is done. */
	checked: false,
	/** Where to go back after signing in. */
	returnTo: null as string | null,
});

/**
 * Whether this browser signed in here and has not signed out: without it,
 * the first look at the cookie is skipped, so a visitor who never signed in
 * costs the host no refused request (and the console no 401).
 */
const HINT = 'platform-admin:signed-in';

function hint(on: boolean) {
	try {
		if (on) localStorage.setItem(HINT, '1');
		else localStorage.removeItem(HINT);
	} catch {
		// Storage refused (a private window): the cookie is looked at each time.
	}
}

function hinted(): boolean {
	try {
		return localStorage.getItem(HINT) !== null;
	} catch {
		return true;
	}
}

/** Reads who the cookie signs in; null when no one. */
export async function load(): Promise<Me | null> {
	if (!session.user && !hinted()) {
		session.checked = true;
		return null;
	}
	try {
		// Who, and what they may do: the nav shows only the modules they may use.
		const [me] = await Promise.all([
			request(readMe({ fields: ['id', 'email', 'first_name', 'last_name', 'role.id', 'role.name'] } as never) as never, { quiet401: true }),
			loadAccess({ quiet401: true }),
		]);
		session.user = me as Me;
	} catch {
		session.user = null;
		clearAccess();
	}
	hint(session.user !== null);
	session.checked = true;
	return session.user;
}

/** Signs in on the session cookie, then goes back where the user was. */
export async function signIn(email: string, password: string) {
	try {
		await client.login({ email, password }, { mode: 'session' });
	} catch (e) {
		throw toApiError(e);
	}
	hint(true);
	await load();
	const back = session.returnTo;
	session.returnTo = null;
	navigate(back && back !== BASE ? back : BASE + 'content', { replace: true, force: true });
}

/** Signs out (the cookie is dropped), then the sign-in page. */
export async function signOut() {
	await client.logout({ mode: 'session' }).catch(() => {});
	hint(false);
	session.user = null;
	clearAccess();
	navigate(BASE, { force: true });
}

onUnauthorized(() => {
	if (!session.user) return;
	hint(false);
	session.user = null;
	session.returnTo = route.path + route.search;
	navigate(BASE, { replace: true, force: true });
});
