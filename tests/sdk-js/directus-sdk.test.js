// The platform driven by the real @directus/sdk, as a front end drives it.
// Run by tests/tests/directus_sdk.rs against a host it started with the
// demo data; PLATFORM_URL, PLATFORM_ADMIN_TOKEN, PLATFORM_EMAIL and
// PLATFORM_PASSWORD (a demo viewer) say where and as whom.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
	authentication,
	createDirectus,
	createFolder,
	createItem,
	customEndpoint,
	deleteFile,
	readFile,
	readFolders,
	readItems,
	readMe,
	rest,
	staticToken,
	updateItem,
	updateMe,
	uploadFiles,
	withToken,
} from '@directus/sdk';

const url = required('PLATFORM_URL');
const adminToken = required('PLATFORM_ADMIN_TOKEN');
const viewer = { email: required('PLATFORM_EMAIL'), password: required('PLATFORM_PASSWORD') };

function required(name) {
	const value = process.env[name];
	if (!value) throw new Error(`${name} is not set: run these tests through tests/tests/directus_sdk.rs`);
	return value;
}

/** A storage the test can look into (the SDK's default keeps it private). */
function visibleStorage(initial = null) {
	let data = initial;
	return { get: async () => data, set: async (value) => { data = value; } };
}

/** A client signing in in `mode`; automatic refresh is off so that no timer outlives a test. */
function signedOutClient(mode, options = {}) {
	return createDirectus(url, options.globals ? { globals: options.globals } : {})
		.with(authentication(mode, { autoRefresh: false, ...options.auth }))
		.with(rest(options.rest ?? {}));
}

const admin = createDirectus(url).with(staticToken(adminToken)).with(rest());

/** The HTTP status of a refused SDK call. */
async function refusal(promise) {
	try {
		await promise;
	} catch (error) {
		return { status: error.response?.status, code: error.errors?.[0]?.extensions?.code };
	}
	assert.fail('the call was not refused');
}

/** A fetch with a cookie jar: what a browser does for a session cookie, and Node's fetch does not. */
function cookieJarFetch() {
	const jar = new Map();
	const fetchWithJar = async (input, init = {}) => {
		const headers = new Headers(init.headers ?? {});
		if (jar.size > 0) headers.set('Cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '));
		const response = await fetch(input, { ...init, headers });
		for (const line of response.headers.getSetCookie()) {
			const [pair, ...attributes] = line.split(';');
			const at = pair.indexOf('=');
			const name = pair.slice(0, at).trim();
			const value = pair.slice(at + 1).trim();
			const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a))
				|| attributes.some((a) => /^\s*expires=/i.test(a) && new Date(a.split('=')[1]) < new Date());
			if (expired || value === '') jar.delete(name);
			else jar.set(name, value);
		}
		return response;
	};
	return { fetch: fetchWithJar, jar };
}

test('json mode: login, readMe with the role name, a /svc route, refresh, refused reuse, logout', async () => {
	const storage = visibleStorage();
	const client = signedOutClient('json', { auth: { storage } });
	const session = await client.login(viewer);
	assert.equal(typeof session.access_token, 'string');
	assert.equal(typeof session.refresh_token, 'string');
	assert.ok(session.expires > 0);

	const me = await client.request(readMe({ fields: ['*', { role: ['name'] }] }));
	assert.equal(me.email, viewer.email);
	assert.deepEqual(me.role, { name: 'Viewer' });
	assert.equal(me.password, undefined, 'no password hash leaves the platform');

	// An extension route sees the signed-in user as it sees a static token's.
	const mine = await client.request(customEndpoint({ path: '/svc/recordings', method: 'GET' }));
	assert.ok(Array.isArray(mine) && mine.length > 0, JSON.stringify(mine));
	for (const recording of mine) assert.equal(recording.user_created, me.id);
	const anonymous = createDirectus(url).with(rest());
	assert.equal((await refusal(anonymous.request(customEndpoint({ path: '/svc/recordings' })))).status, 401);

	// Refresh replaces the session: the old refresh token is used up, and
	// the old access token is refused.
	const { refresh_token: old, access_token: oldAccess } = await storage.get();
	const renewed = await client.refresh();
	assert.notEqual(renewed.refresh_token, old);
	assert.equal((await refusal(client.request(withToken(oldAccess, readMe())))).status, 401);
	assert.equal((await client.request(readMe({ fields: ['email'] }))).email, viewer.email);
	const stale = signedOutClient('json', { auth: { storage: visibleStorage({ refresh_token: old }) } });
	assert.deepEqual(await refusal(stale.refresh()), { status: 401, code: 'INVALID_CREDENTIALS' });

	// Logout ends the session: its access token is refused at once.
	const access = (await storage.get()).access_token;
	await client.logout();
	assert.equal((await storage.get()).access_token, null);
	assert.equal((await refusal(client.request(withToken(access, readMe())))).status, 401);
	assert.equal((await refusal(client.refresh())).status, 400, 'nothing left to refresh with');
});

test('a wrong password and an unknown email are refused alike', async () => {
	const client = signedOutClient('json');
	const wrong = await refusal(client.login({ email: viewer.email, password: 'not-the-password' }));
	const unknown = await refusal(client.login({ email: 'nobody@demo.local', password: 'not-the-password' }));
	assert.deepEqual(wrong, { status: 401, code: 'INVALID_CREDENTIALS' });
	assert.deepEqual(unknown, wrong);
});

test('session mode: the cookie signs requests in, updateMe, refresh and logout', async () => {
	const { fetch: jarFetch, jar } = cookieJarFetch();
	const client = signedOutClient('session', {
		globals: { fetch: jarFetch },
		auth: { credentials: 'include' },
		rest: { credentials: 'include' },
	});
	const session = await client.login(viewer);
	assert.equal(session.access_token, undefined, 'the token travels in the cookie only');
	assert.ok(session.expires > 0);
	const cookieName = [...jar.keys()].find((name) => name.includes('session'));
	assert.ok(cookieName, `a session cookie was set: ${[...jar.keys()]}`);

	const me = await client.request(readMe({ fields: ['id', 'email', 'first_name'] }));
	assert.equal(me.email, viewer.email);
	// A change by cookie: the SDK sends JSON, which the CSRF rule asks for.
	const renamed = await client.request(updateMe({ first_name: 'Victoria' }, { fields: ['first_name'] }));
	assert.equal(renamed.first_name, 'Victoria');
	await client.request(updateMe({ first_name: me.first_name }));

	const before = jar.get(cookieName);
	await client.refresh();
	const after = jar.get(cookieName);
	assert.notEqual(after, before, 'refresh sets a new session cookie');
	assert.equal((await client.request(readMe({ fields: ['email'] }))).email, viewer.email);
	// A copy of the old cookie neither signs in nor refreshes.
	jar.set(cookieName, before);
	assert.equal((await refusal(client.request(readMe()))).status, 401);
	assert.equal((await refusal(client.refresh())).status, 401);
	jar.set(cookieName, after);

	await client.logout();
	assert.equal(jar.has(cookieName), false, 'logout clears the cookie');
	jar.set(cookieName, before);
	assert.equal((await refusal(client.request(readMe()))).status, 401, 'the ended session is refused');
});

test('a suspended user is refused at once, token and login alike', async () => {
	const viewerRole = (await admin.request(readItems('platform_roles', { filter: { name: { _eq: 'Viewer' } }, fields: ['id'] })))[0].id;
	const email = `suspended-${Date.now()}@demo.local`;
	const user = await admin.request(createItem('platform_users', {
		email, password: 'a-long-password', role: viewerRole, status: 'active', first_name: 'Sam',
	}));
	const client = signedOutClient('json');
	await client.login({ email, password: 'a-long-password' });
	assert.equal((await client.request(readMe({ fields: ['email'] }))).email, email);

	await admin.request(updateItem('platform_users', user.id, { status: 'suspended' }));
	assert.equal((await refusal(client.request(readMe()))).status, 401);
	assert.equal((await refusal(client.refresh())).status, 401);
	assert.equal((await refusal(signedOutClient('json').login({ email, password: 'a-long-password' }))).status, 401);
});

test('readItems follows a reference and a one-to-many alias under the reader\'s permissions', async () => {
	const policy = (await admin.request(readItems('platform_policies', { filter: { name: { _eq: 'Viewer' } }, fields: ['id'] })))[0].id;
	for (const [collection, fields] of [
		['videos', ['*']],
		['videos_models', ['*']],
		['platform_files', ['*']],
		['platform_users', ['id', 'first_name', 'last_name']],
	]) {
		await admin.request(createItem('platform_permissions', { policy, collection, action: 'read', fields }));
	}
	const client = signedOutClient('json');
	await client.login(viewer);
	const videos = await client.request(readItems('videos', {
		fields: ['*', { models: [{ platform_users_id: ['*'] }] }, 'movie.*'],
		sort: ['slug'],
	}));
	assert.ok(videos.length > 0);
	const links = await admin.request(readItems('videos_models', { limit: -1, fields: ['videos_id'] }));
	let models = 0;
	for (const video of videos) {
		assert.equal(typeof video.slug, 'string');
		assert.ok(video.movie === null || typeof video.movie.id === 'string', JSON.stringify(video.movie));
		assert.equal(video.models.length, links.filter((l) => l.videos_id === video.id).length, video.slug);
		for (const { platform_users_id: model } of video.models) {
			assert.equal(typeof model.first_name, 'string');
			assert.equal(model.email, undefined, 'another user\'s email never shows');
			models += 1;
		}
	}
	assert.ok(models > 0, 'the demo videos have models');
	await client.logout();
});

test('uploadFiles sends fields and a file; readFile, readFolders and deleteFile', async () => {
	const folder = await admin.request(createFolder({ name: 'Uploads' }));
	const client = signedOutClient('json');
	await client.login(viewer);
	const me = await client.request(readMe({ fields: ['id'] }));

	const form = new FormData();
	form.append('title', 'A note');
	form.append('folder', folder.id);
	form.append('file', new Blob(['hello from the sdk'], { type: 'text/plain' }), 'note.txt');
	const file = await client.request(uploadFiles(form));
	assert.equal(file.title, 'A note');
	assert.equal(file.folder, folder.id);
	assert.equal(file.type, 'text/plain');
	assert.equal(file.filesize, 18);
	assert.equal(file.filename_download, 'note.txt');
	assert.equal(file.uploaded_by, me.id);

	const read = await client.request(readFile(file.id, { fields: ['id', 'title', 'folder.name'] }));
	assert.deepEqual(read, { id: file.id, title: 'A note', folder: { name: 'Uploads' } });
	const folders = await client.request(readFolders({ filter: { name: { _eq: 'Uploads' } }, fields: ['id', 'name'] }));
	assert.deepEqual(folders, [{ id: folder.id, name: 'Uploads' }]);
	const bytes = await fetch(`${url}/assets/${file.id}`, { headers: { Authorization: `Bearer ${(await client.getToken())}` } });
	assert.equal(bytes.status, 200);
	assert.equal(await bytes.text(), 'hello from the sdk');

	await client.request(deleteFile(file.id));
	assert.equal((await refusal(client.request(readFile(file.id)))).status, 403);
	await client.logout();
});
