// The platform driven by the real @directus/sdk, as a front end drives it.
// Run by tests/tests/directus_sdk.rs against a host it started with the
// demo data; PLATFORM_URL, PLATFORM_ADMIN_TOKEN, PLATFORM_EMAIL and
// PLATFORM_PASSWORD (a demo viewer) say where and as whom. The host mails
// through an SMTP server the Rust side started, which writes each message
// as a JSON file in PLATFORM_MAIL_DIR; PLATFORM_VERIFY_URL and
// PLATFORM_RESET_URL are the links the host's allow-lists accept.
import assert from 'node:assert/strict';
import { readdir, readFile as readLocalFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';

import {
	aggregate,
	authentication,
	createComment,
	createDirectus,
	createFolder,
	createItem,
	createPermission,
	createPolicy,
	createRole,
	createUser,
	createUsers,
	customEndpoint,
	deleteComment,
	deleteFile,
	deleteItem,
	deletePermission,
	deletePolicy,
	deleteRole,
	deleteUser,
	deleteUsers,
	passwordRequest,
	passwordReset,
	readCollection,
	readCollections,
	readComment,
	readComments,
	readField,
	readFields,
	readFieldsByCollection,
	readFile,
	readFiles,
	readFolders,
	readItems,
	readMe,
	readPermissions,
	readPolicies,
	readPolicyGlobals,
	readRelationByCollection,
	readRelations,
	readRoles,
	readUser,
	readUserPermissions,
	readUsers,
	registerUser,
	registerUserVerify,
	rest,
	staticToken,
	updateComment,
	updateItem,
	updateMe,
	updatePermission,
	updatePolicy,
	updateUser,
	updateUsers,
	uploadFiles,
	withToken,
} from '@directus/sdk';

const url = required('PLATFORM_URL');
const adminToken = required('PLATFORM_ADMIN_TOKEN');
const viewer = { email: required('PLATFORM_EMAIL'), password: required('PLATFORM_PASSWORD') };
const mailDir = required('PLATFORM_MAIL_DIR');
const verifyUrl = required('PLATFORM_VERIFY_URL');
const resetUrl = required('PLATFORM_RESET_URL');

function required(name) {
	const value = process.env[name];
	if (!value) throw new Error(`${name} is not set: run these tests through tests/tests/directus_sdk.rs`);
	return value;
}

/** The messages the mail server received for `to`, in order. */
async function mailsTo(to) {
	let names = [];
	try {
		names = (await readdir(mailDir)).filter((n) => n.endsWith('.json')).sort();
	} catch {
		return [];
	}
	const mails = [];
	for (const name of names) mails.push(JSON.parse(await readLocalFile(join(mailDir, name), 'utf8')));
	return mails.filter((m) => m.to.some((t) => t.toLowerCase() === to.toLowerCase()));
}

/** Waits for the `count`th message to `to`; the token of its link. */
async function mailedToken(to, count = 1) {
	const deadline = Date.now() + 20_000;
	for (;;) {
		const mails = await mailsTo(to);
		if (mails.length >= count) {
			const link = mails[count - 1].text.split(/\s+/).find((w) => w.startsWith('http'));
			return new URL(link).searchParams.get('token');
		}
		assert.ok(Date.now() < deadline, `no mail ${count} to ${to}`);
		await new Promise((resolve) => setTimeout(resolve, 50));
	}
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

/** The first error of a refused SDK call, with its status. */
async function refusedWith(promise) {
	try {
		await promise;
	} catch (error) {
		const first = error.errors?.[0] ?? {};
		return { status: error.response?.status, code: first.extensions?.code, message: first.message };
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
	// The profile the site's pages edit.
	const profile = { tags: ['rope', 'art'], location: 'Lisbon', title: 'Rigger', language: 'pt', website: 'https://example.com/v' };
	const edited = await client.request(updateMe(profile, { fields: Object.keys(profile) }));
	assert.deepEqual(edited, profile);

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
			assert.equal(model.email ?? null, null, 'another user\'s email never shows');
			models += 1;
		}
	}
	assert.ok(models > 0, 'the demo videos have models');
	await client.logout();
});

test('registerUser with a verification_url, then registerUserVerify with the mailed token', async () => {
	const email = `registered-${Date.now()}@site.test`;
	const password = 'a-long-password';
	const client = createDirectus(url).with(rest());
	await client.request(registerUser(email, password, { verification_url: verifyUrl, first_name: 'Reg' }));
	const token = await mailedToken(email);
	assert.equal(token.length, 64);
	// Unverified: no sign-in yet.
	assert.equal((await refusal(signedOutClient('json').login({ email, password }))).status, 401);
	await client.request(registerUserVerify(token));
	const signedIn = signedOutClient('json');
	await signedIn.login({ email, password });
	const me = await signedIn.request(readMe({ fields: ['first_name', 'status'] }));
	assert.deepEqual(me, { first_name: 'Reg', status: 'active' });
	// A used token, a made-up one, and a link outside the allow-list.
	assert.deepEqual(await refusal(client.request(registerUserVerify(token))), { status: 400, code: 'INVALID_PAYLOAD' });
	assert.deepEqual(await refusal(client.request(registerUserVerify('garbage'))), { status: 400, code: 'INVALID_PAYLOAD' });
	assert.deepEqual(
		await refusal(client.request(registerUser(`other-${email}`, password, { verification_url: 'https://evil.test/verify' }))),
		{ status: 400, code: 'INVALID_PAYLOAD' },
	);
});

test('passwordRequest then passwordReset: the new password works, old sessions and the used token do not', async () => {
	const viewerRole = (await admin.request(readItems('platform_roles', { filter: { name: { _eq: 'Viewer' } }, fields: ['id'] })))[0].id;
	const email = `forgetful-${Date.now()}@site.test`;
	await admin.request(createItem('platform_users', { email, password: 'old-password', role: viewerRole }));
	const old = signedOutClient('json');
	await old.login({ email, password: 'old-password' });
	await old.request(readMe());

	const client = createDirectus(url).with(rest());
	await client.request(passwordRequest(email, resetUrl));
	// An unknown email is answered alike, and mailed nothing.
	await client.request(passwordRequest(`nobody-${email}`, resetUrl));
	const token = await mailedToken(email);
	await client.request(passwordReset(token, 'new-password'));

	assert.equal((await refusal(old.request(readMe()))).status, 401);
	assert.equal((await refusal(signedOutClient('json').login({ email, password: 'old-password' }))).status, 401);
	const renewed = signedOutClient('json');
	await renewed.login({ email, password: 'new-password' });
	await renewed.request(readMe());
	assert.deepEqual(await refusal(client.request(passwordReset(token, 'third-password'))), { status: 403, code: 'FORBIDDEN' });
	assert.deepEqual(
		await refusal(client.request(passwordRequest(email, 'https://evil.test/reset'))),
		{ status: 400, code: 'INVALID_PAYLOAD' },
	);
	assert.equal((await mailsTo(`nobody-${email}`)).length, 0);
});

test('the site\'s own reads: readMe with its policies, comments, the users directory', async () => {
	const client = signedOutClient('json');
	await client.login(viewer);
	const fields = ['*', 'avatar.*', 'policies.*', 'policies.policy.name', 'policies.policy.id',
		'role.*', 'role.policies.policy.name', 'role.policies.policy.id'];

	// A member with no policy of their own, then with one.
	const me = await client.request(readMe({ fields }));
	assert.equal(me.email, viewer.email);
	assert.deepEqual(me.policies, []);
	assert.equal(me.role.name, 'Viewer');
	assert.deepEqual(me.role.policies.map((access) => access.policy.name), ['Viewer']);
	const policy = await admin.request(createItem('platform_policies', { name: 'Site editors', admin_access: false }));
	const access = await admin.request(createItem('platform_access', { user: me.id, policy: policy.id, sort: 1 }));
	const again = await client.request(readMe({ fields }));
	assert.deepEqual(again.policies, [{
		id: access.id, user: me.id, role: null, sort: 1, policy: { id: policy.id, name: 'Site editors' },
	}]);
	await admin.request(deleteItem('platform_access', access.id));
	await admin.request(deleteItem('platform_policies', policy.id));

	// Comments on one of their recordings: made, listed, counted, changed, deleted.
	const [recording] = await client.request(readItems('recordings', { filter: { user_created: me.id }, fields: ['id'], limit: 1 }));
	assert.ok(recording, 'the demo viewer owns recordings');
	const countMine = async () => {
		const [{ count }] = await client.request(aggregate('platform_comments', {
			aggregate: { count: '*' }, query: { filter: { user_created: me.id } },
		}));
		return Number(count);
	};
	const before = await countMine();
	const created = await client.request(createComment({ collection: 'recordings', item: recording.id, comment: 'From the SDK' }));
	assert.equal(created.user_created, me.id);
	assert.equal(created.comment, 'From the SDK');
	assert.equal(await countMine(), before + 1);
	const listed = await client.request(readComments({
		filter: { collection: 'recordings', item: recording.id }, sort: ['-date_created'], fields: ['id', 'comment'],
	}));
	assert.ok(listed.some((c) => c.id === created.id), JSON.stringify(listed));
	const edited = await client.request(updateComment(created.id, { comment: 'Edited' }));
	assert.equal(edited.comment, 'Edited');
	assert.equal((await client.request(readComment(created.id, { fields: ['comment'] }))).comment, 'Edited');
	await client.request(deleteComment(created.id));
	assert.equal((await refusal(client.request(readComment(created.id)))).status, 403);
	assert.equal(await countMine(), before);
	const missing = await refusal(client.request(createComment({ collection: 'recordings', item: recording.id })));
	assert.deepEqual(missing, { status: 400, code: 'INVALID_PAYLOAD' });

	// Other users, under the users collection's permissions.
	const found = await admin.request(readUsers({ filter: { email: viewer.email }, fields: ['id', 'email', 'role.name'] }));
	assert.deepEqual(found, [{ id: me.id, email: viewer.email, role: { name: 'Viewer' } }]);
	assert.equal((await admin.request(readUser(me.id, { fields: ['email'] }))).email, viewer.email);
	const rule = await admin.request(createItem('platform_permissions', {
		policy: me.role.policies[0].policy.id, collection: 'platform_users', action: 'read', fields: ['id', 'first_name'],
	}));
	const named = await client.request(readUsers({ filter: { id: me.id }, fields: ['id', 'first_name'] }));
	assert.deepEqual(named, [{ id: me.id, first_name: me.first_name }]);
	const read = await client.request(readUser(me.id));
	assert.equal(read.id, me.id);
	assert.equal(read.first_name, me.first_name);
	assert.equal(read.status, undefined, 'only the fields their rules give');
	assert.equal((await refusal(client.request(readUser(me.id, { fields: ['status'] })))).status, 403);
	// Their email is theirs to read, no one else's.
	assert.equal((await client.request(readUser(me.id, { fields: ['email'] }))).email, viewer.email);
	const others = await client.request(readUsers({ filter: { id: { _neq: me.id } }, fields: ['email'] }));
	assert.ok(others.length > 0 && others.every((u) => u.email === null), JSON.stringify(others));
	await admin.request(deleteItem('platform_permissions', rule.id));
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

test('createUser(s), updateUser(s) and deleteUser(s) write users under the users collection\'s rules', async () => {
	const viewerRole = (await admin.request(readItems('platform_roles', { filter: { name: 'Viewer' }, fields: ['id'] })))[0].id;
	const one = await admin.request(createUser({
		email: 'New.Person@Demo.local', password: 'a long password', first_name: 'New', last_name: 'Person', role: viewerRole,
	}));
	assert.equal(one.email, 'new.person@demo.local', 'emails are stored in lower case');
	assert.notEqual(one.password, 'a long password');
	const two = await admin.request(createUsers([
		{ email: 'first.of.two@demo.local', first_name: 'First', role: viewerRole },
		{ email: 'second.of.two@demo.local', first_name: 'Second', role: viewerRole },
	]));
	assert.deepEqual(two.map((u) => u.first_name), ['First', 'Second']);

	// The password was hashed: it signs in.
	const member = signedOutClient('json', { auth: { storage: visibleStorage() } });
	await member.login({ email: 'new.person@demo.local', password: 'a long password' });
	assert.equal((await member.request(readMe({ fields: ['first_name'] }))).first_name, 'New');
	// A member may not write other users.
	assert.equal((await refusal(member.request(createUser({ email: 'x@demo.local' })))).status, 403);
	assert.equal((await refusal(member.request(updateUser(two[0].id, { first_name: 'Mine' })))).status, 403);
	assert.equal((await refusal(member.request(deleteUser(two[0].id)))).status, 403);

	assert.equal((await admin.request(updateUser(one.id, { first_name: 'Renamed' }))).first_name, 'Renamed');
	const both = await admin.request(updateUsers(two.map((u) => u.id), { last_name: 'Batch' }));
	assert.deepEqual(both.map((u) => u.last_name), ['Batch', 'Batch']);
	const tooLong = await refusal(admin.request(updateUser(one.id, { first_name: 'x'.repeat(5000) })));
	assert.equal(tooLong.status, 400);

	// A new password ends the user's sessions.
	await admin.request(updateUser(one.id, { password: 'another long password' }));
	assert.equal((await refusal(member.refresh())).status, 401);
	await member.login({ email: 'new.person@demo.local', password: 'another long password' });

	await admin.request(deleteUser(one.id));
	await admin.request(deleteUsers(two.map((u) => u.id)));
	const left = await admin.request(readUsers({
		filter: { id: { _in: [one.id, ...two.map((u) => u.id)] } }, fields: ['id'],
	}));
	assert.deepEqual(left, []);
});

test('fields a caller may not read, or that do not exist, are refused as Directus words it', async () => {
	const client = signedOutClient('json');
	await client.login(viewer);
	const one = await refusedWith(client.request(readItems('videos', { fields: ['id', 'nope'] })));
	assert.deepEqual(one, {
		status: 403, code: 'FORBIDDEN',
		message: 'You don\'t have permission to access field "nope" in collection "videos" or it does not exist. Queried in root.',
	});
	const two = await refusedWith(admin.request(readItems('videos', { fields: ['nope', 'nada'] })));
	assert.deepEqual(two, {
		status: 403, code: 'FORBIDDEN',
		message: 'You don\'t have permission to access fields "nope", "nada" in collection "videos" or they do not exist. Queried in root.',
	});
	const nested = await refusedWith(client.request(readItems('videos', { fields: ['id', 'models.platform_users_id.nope'] })));
	assert.deepEqual(nested, {
		status: 403, code: 'FORBIDDEN',
		message: 'You don\'t have permission to access field "nope" in collection "platform_users" or it does not exist. Queried in "models.platform_users_id".',
	});
	// A field their rules do not give reads as one that does not exist.
	const me = await client.request(readMe({ fields: ['id', 'role.policies.policy.id'] }));
	const rule = await admin.request(createItem('platform_permissions', {
		policy: me.role.policies[0].policy.id, collection: 'platform_users', action: 'read', fields: ['id', 'first_name'],
	}));
	const refused = await refusedWith(client.request(readUser(me.id, { fields: ['id', 'status'] })));
	await admin.request(deleteItem('platform_permissions', rule.id));
	assert.deepEqual(refused, {
		status: 403, code: 'FORBIDDEN',
		message: 'You don\'t have permission to access field "status" in collection "platform_users" or it does not exist. Queried in root.',
	});
	await client.logout();
});

test('search finds the items one of whose readable fields holds the text, on items, users, files and comments', async () => {
	const video = await admin.request(createItem('videos', { slug: 'zebra-crossing', title: 'The Zebra Crossing' }));
	const titles = async (query) => (await admin.request(readItems('videos', { ...query, fields: ['id', 'title'] }))).map((v) => v.id);
	assert.deepEqual(await titles({ search: 'zebra CROSS' }), [video.id], 'string fields, ignoring case');
	assert.deepEqual(await titles({ search: 'no video holds this' }), []);
	assert.deepEqual(await titles({ search: video.id }), [video.id], 'an id');
	assert.ok((await titles({ search: 'zebra', limit: 1 })).length === 1);

	const users = await admin.request(readUsers({ search: 'VICTOR@demo', fields: ['email'] }));
	assert.deepEqual(users.map((u) => u.email), [viewer.email]);

	const client = signedOutClient('json');
	await client.login(viewer);
	const form = new FormData();
	form.append('title', 'Searchable walrus notes');
	form.append('file', new Blob(['walrus'], { type: 'text/plain' }), 'walrus.txt');
	const file = await client.request(uploadFiles(form));
	const files = await client.request(readFiles({ search: 'WALRUS', fields: ['id'] }));
	assert.deepEqual(files.map((f) => f.id), [file.id]);
	await client.request(deleteFile(file.id));

	const [recording] = await client.request(readItems('recordings', { filter: { user_created: { _eq: (await client.request(readMe({ fields: ['id'] }))).id } }, fields: ['id'], limit: 1 }));
	const comment = await client.request(createComment({ collection: 'recordings', item: recording.id, comment: 'A note about flamingos' }));
	const found = await client.request(readComments({ search: 'flamingo', fields: ['id'] }));
	assert.deepEqual(found.map((c) => c.id), [comment.id]);
	await client.request(deleteComment(comment.id));
	await client.logout();
	await admin.request(deleteItem('videos', video.id));
});

test('the data model through readCollections, readFields and readRelations, as each caller may read it', async () => {
	const member = signedOutClient('json');
	await member.login(viewer);
	const anonymous = createDirectus(url).with(rest());
	for (const [who, client] of [['admin', admin], ['member', member], ['anonymous', anonymous]]) {
		const collections = await client.request(readCollections());
		const names = collections.map((c) => c.collection);
		assert.ok(names.includes('videos'), `${who}: ${names}`);
		for (const c of collections) assert.equal(typeof c.meta, 'object', `${who}: ${c.collection}`);
		assert.equal((await client.request(readCollection('videos'))).collection, 'videos');
		assert.ok(!names.includes('platform_signing_keys'), `${who}: an internal collection is never listed`);

		// A field listed is a field the caller reads through the items API.
		const fields = await client.request(readFieldsByCollection('videos'));
		assert.ok(fields.some((f) => f.field === 'title' && f.type === 'string'), `${who}: ${JSON.stringify(fields.map((f) => f.field))}`);
		const stored = fields.filter((f) => f.type !== 'alias').map((f) => f.field);
		await client.request(readItems('videos', { fields: stored, limit: 1 }));
		assert.equal((await client.request(readField('videos', 'title'))).field, 'title');
		const all = await client.request(readFields());
		assert.ok(all.some((f) => f.collection === 'videos' && f.field === 'slug'), who);

		// A relation listed is one `fields=a.*` expands.
		const relations = await client.request(readRelationByCollection('videos_models'));
		const toVideo = relations.find((r) => r.field === 'videos_id');
		assert.equal(toVideo?.related_collection, 'videos', `${who}: ${JSON.stringify(relations)}`);
		const expanded = await client.request(readItems('videos_models', { fields: ['videos_id.slug'], limit: 1 }));
		assert.equal(typeof expanded[0].videos_id.slug, 'string', who);
		assert.ok((await client.request(readRelations())).length >= relations.length, who);
	}

	// What a caller may not read is neither listed nor answered.
	const publicNames = (await anonymous.request(readCollections())).map((c) => c.collection);
	assert.ok(!publicNames.includes('recordings'), `${publicNames}`);
	assert.equal((await refusal(anonymous.request(readCollection('recordings')))).status, 403);
	assert.equal((await refusal(anonymous.request(readFieldsByCollection('nowhere')))).status, 403);
	const memberNames = (await member.request(readCollections())).map((c) => c.collection);
	assert.ok(memberNames.includes('recordings'), `${memberNames}`);
	// svc's metadata, as its migration set it.
	const events = await admin.request(readField('recordings', 'events'));
	assert.equal(events.meta.interface, 'recording-timeline');
	await member.logout();
});

test('roles, policies and permissions: an administrator grants, the member\'s next request has it, members write none', async () => {
	const role = await admin.request(createRole({ name: 'SDK editors', icon: 'edit' }));
	const policy = await admin.request(createPolicy({ name: 'SDK editing', app_access: true }));
	assert.equal(policy.admin_access, false);
	await admin.request(createItem('platform_access', { role: role.id, policy: policy.id }));
	const roles = await admin.request(readRoles({ filter: { id: { _eq: role.id } }, fields: ['name', 'icon', 'policies.policy.name'] }));
	assert.deepEqual(roles, [{ name: 'SDK editors', icon: 'edit', policies: [{ policy: { name: 'SDK editing' } }] }]);

	await admin.request(createUser({ email: 'sdk.editor@demo.local', password: 'a long password', role: role.id }));
	const member = signedOutClient('json', { auth: { storage: visibleStorage() } });
	await member.login({ email: 'sdk.editor@demo.local', password: 'a long password' });
	assert.deepEqual(await member.request(readPolicyGlobals()), { app_access: true, admin_access: false, enforce_tfa: false });
	assert.equal((await refusal(member.request(readItems('achievements', { limit: 1 })))).status, 403);
	assert.equal((await member.request(readUserPermissions())).achievements, undefined);

	// Granted: the member's next request reads, and their permissions say so.
	const permission = await admin.request(createPermission({
		policy: policy.id, collection: 'achievements', action: 'read', fields: ['code'],
	}));
	const [first] = await member.request(readItems('achievements', { limit: 1 }));
	assert.deepEqual(Object.keys(first), ['code']);
	const mine = await member.request(readUserPermissions());
	assert.deepEqual(mine.achievements.read, { access: 'full', fields: ['code'] });
	assert.deepEqual(mine.achievements.update, { access: 'none' });

	await admin.request(updatePermission(permission.id, { permissions: { code: { _eq: 'no such code' } } }));
	assert.deepEqual(await member.request(readItems('achievements')), []);
	assert.equal((await member.request(readUserPermissions())).achievements.read.access, 'partial');
	const listed = await admin.request(readPermissions({ filter: { policy: { _eq: policy.id } }, fields: ['collection', 'action'] }));
	assert.deepEqual(listed, [{ collection: 'achievements', action: 'read' }]);

	await admin.request(updatePolicy(policy.id, { enforce_tfa: true }));
	assert.equal((await member.request(readPolicyGlobals())).enforce_tfa, true);
	assert.deepEqual((await admin.request(readPolicies({ filter: { id: { _eq: policy.id } }, fields: ['permissions.action'] })))[0],
		{ permissions: [{ action: 'read' }] });

	await admin.request(deletePermission(permission.id));
	assert.equal((await refusal(member.request(readItems('achievements', { limit: 1 })))).status, 403);

	// A permission the platform could not apply is refused.
	const share = await refusedWith(admin.request(createPermission({ policy: policy.id, collection: 'achievements', action: 'share' })));
	assert.equal(share.status, 400);
	assert.equal(share.code, 'INVALID_PAYLOAD');

	// A viewer writes no access and reads only their own.
	const viewerClient = signedOutClient('json');
	await viewerClient.login(viewer);
	assert.equal((await refusal(viewerClient.request(createRole({ name: 'Mine' })))).status, 403);
	assert.equal((await refusal(viewerClient.request(createPolicy({ name: 'Mine', admin_access: true })))).status, 403);
	assert.equal((await refusal(viewerClient.request(updatePolicy(policy.id, { admin_access: true })))).status, 403);
	assert.equal((await refusal(viewerClient.request(createPermission({ policy: policy.id, collection: 'videos', action: 'read' })))).status, 403);
	assert.equal((await refusal(viewerClient.request(deletePermission(permission.id)))).status, 403);
	assert.deepEqual((await viewerClient.request(readPolicies({ fields: ['name'] }))).map((p) => p.name), ['Viewer']);
	assert.deepEqual((await viewerClient.request(readRoles({ fields: ['name'] }))).map((r) => r.name), ['Viewer']);
	assert.equal((await refusal(viewerClient.request(readPermissions()))).status, 403);
	assert.deepEqual(await viewerClient.request(readPolicyGlobals()), { app_access: false, admin_access: false, enforce_tfa: false });
	await viewerClient.logout();

	await member.logout();
	await admin.request(deletePolicy(policy.id));
	await admin.request(deleteRole(role.id));
});
