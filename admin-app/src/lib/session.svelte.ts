// The signed-in user on the host's session cookie: sign-in, sign-out, and a
// 401 on any call → the sign-in page, then back where the user was.
import { readMe } from '@directus/sdk';

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

/** Reads who the cookie signs in; null when no one. */
export async function load(): Promise<Me | null> {
	try {
		session.user = (await request(readMe({ fields: ['id', 'email', 'first_name', 'last_name', 'role.id', 'role.name'] }) as never, {
			quiet401: true,
		})) as Me;
	} catch {
		session.user = null;
	}
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
	await load();
	const back = session.returnTo;
	session.returnTo = null;
	navigate(back && back !== BASE ? back : BASE + 'content', { replace: true, force: true });
}

/** Signs out (the cookie is dropped), then the sign-in page. */
export async function signOut() {
	await client.logout({ mode: 'session' }).catch(() => {});
	session.user = null;
	navigate(BASE, { force: true });
}

onUnauthorized(() => {
	if (!session.user) return;
	session.user = null;
	session.returnTo = route.path + route.search;
	navigate(BASE, { replace: true, force: true });
});
