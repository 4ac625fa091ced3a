// The admin app's files, access and platform modules in a real browser:
// Chromium driven by playwright-core. HOST_URL (or PLATFORM_URL) is a host
// serving the app at /admin; ADMIN_EMAIL / ADMIN_PASSWORD sign in an
// administrator, MEMBER_EMAIL / MEMBER_PASSWORD a user whose role's policy
// may not read some collection; PLATFORM_CHROMIUM is the browser
// (/usr/bin/chromium by default); SCREENSHOT_DIR, when set, receives a
// screenshot of each page (docs/admin-app/<page>.png).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { deflateSync } from 'node:zlib';

import { chromium } from 'playwright-core';

import { unreachableOrUnlabelled } from './admin-a11y.js';

const url = required('HOST_URL', 'PLATFORM_URL');
const adminEmail = required('ADMIN_EMAIL');
const adminPassword = required('ADMIN_PASSWORD');
const memberEmail = required('MEMBER_EMAIL');
const memberPassword = required('MEMBER_PASSWORD');
const executablePath = process.env.PLATFORM_CHROMIUM || process.env.CHROMIUM || '/usr/bin/chromium';
const screenshots = process.env.SCREENSHOT_DIR || '';

function required(...names) {
	for (const name of names) if (process.env[name]) return process.env[name];
	throw new Error(`${names.join(' or ')} is not set: run these tests through the admin app's browser test`);
}

const origin = new URL(url).origin;
const stamp = Date.now().toString(36);

/** A PNG of width × height, a gradient tinted by `tint` (stored, not compressed, to make a larger upload). */
function png(width, height, tint) {
	const crcTable = Array.from({ length: 256 }, (_, n) => {
		let c = n;
		for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
		return c >>> 0;
	});
	const crc = (buf) => {
		let c = 0xffffffff;
		for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
		return (c ^ 0xffffffff) >>> 0;
	};
	const chunk = (type, data) => {
		const head = Buffer.alloc(8);
		head.writeUInt32BE(data.length, 0);
		head.write(type, 4, 'ascii');
		const tail = Buffer.alloc(4);
		tail.writeUInt32BE(crc(Buffer.concat([Buffer.from(type, 'ascii'), data])), 0);
		return Buffer.concat([head, data, tail]);
	};
	const ihdr = Buffer.alloc(13);
	ihdr.writeUInt32BE(width, 0);
	ihdr.writeUInt32BE(height, 4);
	ihdr[8] = 8; // bit depth
	ihdr[9] = 2; // RGB
	const raw = Buffer.alloc((width * 3 + 1) * height);
	for (let y = 0; y < height; y++) {
		const row = y * (width * 3 + 1);
		for (let x = 0; x < width; x++) {
			raw[row + 1 + x * 3] = (x * 255) / width;
			raw[row + 2 + x * 3] = (y * 255) / height;
			raw[row + 3 + x * 3] = tint;
		}
	}
	return Buffer.concat([
		Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
		chunk('IHDR', ihdr),
		chunk('IDAT', deflateSync(raw, { level: 0 })),
		chunk('IEND', Buffer.alloc(0)),
	]);
}

/** A JSON call to the host from Node, with a bearer token. */
async function call(path, { token, method = 'GET', json } = {}) {
	const headers = {};
	if (token) headers.authorization = `Bearer ${token}`;
	if (json !== undefined) headers['content-type'] = 'application/json';
	const r = await fetch(`${origin}${path}`, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) });
	const text = await r.text();
	let body = null;
	try {
		body = text ? JSON.parse(text) : null;
	} catch {
		body = text;
	}
	return { status: r.status, body };
}

async function tokenOf(email, password) {
	const r = await call('/auth/login', { method: 'POST', json: { email, password } });
	assert.equal(r.status, 200, `sign-in of ${email}: ${JSON.stringify(r.body)}`);
	return r.body.data.access_token;
}

let browser;

before(async () => {
	browser = await chromium.launch({
		executablePath,
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	if (screenshots) mkdirSync(screenshots, { recursive: true });
});

after(async () => {
	await browser?.close();
});

/** A signed-in administrator's tab; `errors` collects console errors and page errors from then on. */
async function adminTab() {
	return signedInTab(adminEmail, adminPassword);
}

/** A tab signed in as `email`; `errors` collects console errors and page errors from the sign-in page on. */
async function signedInTab(email, password) {
	const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
	const tab = await context.newPage();
	await tab.goto(`${origin}/admin/`);
	await tab.fill('#email', email);
	await tab.fill('#password', password);
	await tab.click('#sign-in button[type=submit]');
	await tab.waitForSelector('#signed-in');
	const errors = [];
	tab.on('console', (m) => {
		if (m.type() === 'error') errors.push(`${tab.url()}: ${m.text()}`);
	});
	tab.on('pageerror', (e) => errors.push(`${tab.url()}: ${e}`));
	return { context, tab, errors };
}

async function shot(tab, name) {
	if (!screenshots) return;
	await tab.screenshot({ path: join(screenshots, `${name}.png`), fullPage: false });
}

test('files: three files dropped at once upload with a progress bar each and show as thumbnails; one more by the file input; edit and delete', { timeout: 120_000 }, async () => {
	const { context, tab, errors } = await adminTab();
	await tab.goto(`${origin}/admin/files`);
	const folder = `Uploads ${stamp}`;
	await tab.fill('#new-folder', folder);
	await tab.click('form:has(#new-folder) button[type=submit]');
	await tab.click(`aside a:text-is("${folder}")`);
	await tab.waitForSelector(`#files-title:text-is("${folder}")`);
	const folderId = new URL(tab.url()).pathname.split('/').pop();

	const files = [
		{ name: `first-${stamp}.png`, mimeType: 'image/png', buffer: png(900, 700, 40) },
		{ name: `second-${stamp}.png`, mimeType: 'image/png', buffer: png(640, 480, 140) },
		{ name: `third-${stamp}.png`, mimeType: 'image/png', buffer: png(320, 240, 240) },
	];
	// The bars as the page shows them while the uploads run.
	await tab.evaluate(() => {
		window.__bars = new Set();
		new MutationObserver(() => {
			for (const p of document.querySelectorAll('.upload progress')) window.__bars.add(`${p.id}:${p.value < p.max ? 'partial' : 'full'}`);
		}).observe(document.body, { subtree: true, childList: true, attributes: true });
	});
	const dataTransfer = await tab.evaluateHandle((list) => {
		const dt = new DataTransfer();
		for (const f of list) dt.items.add(new File([Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0))], f.name, { type: f.mimeType }));
		return dt;
	}, files.map((f) => ({ name: f.name, mimeType: f.mimeType, base64: f.buffer.toString('base64') })));
	await tab.dispatchEvent('.dropzone', 'dragover', { dataTransfer });
	await tab.dispatchEvent('.dropzone', 'drop', { dataTransfer });

	await tab.waitForFunction((n) => document.querySelectorAll('.upload').length === n, 3);
	await tab.waitForFunction(() => [...document.querySelectorAll('.upload')].every((u) => u.dataset.status !== 'uploading'), null, { timeout: 60_000 });
	const outcome = await tab.$$eval('.upload', (list) => list.map((u) => `${u.dataset.status}: ${u.querySelector('.status').textContent}`));
	assert.ok(outcome.every((o) => o.startsWith('done')), JSON.stringify(outcome));
	const bars = await tab.$$eval('.upload', (list) =>
		list.map((u) => {
			const p = u.querySelector('progress');
			return { name: u.querySelector('label').textContent, label: p.labels[0]?.textContent, value: p.value, max: p.max };
		}),
	);
	assert.deepEqual(bars.map((b) => b.name).sort(), files.map((f) => f.name).sort());
	for (const b of bars) {
		assert.equal(b.label, b.name, 'each bar is labelled by its file');
		assert.equal(b.value, b.max, `the bar of ${b.name} is full: ${JSON.stringify(b)}`);
	}
	const seen = await tab.evaluate(() => [...window.__bars]);
	assert.ok(new Set(seen.map((s) => s.split(':')[0])).size >= 3, `a bar per file was shown: ${seen}`);

	// One more by the file input.
	await tab.setInputFiles('#upload-input', [{ name: `fourth-${stamp}.png`, mimeType: 'image/png', buffer: png(200, 200, 90) }]);
	await tab.waitForFunction(() => {
		const list = [...document.querySelectorAll('.upload')];
		return list.length === 4 && list.every((u) => u.dataset.status === 'done');
	}, null, { timeout: 30_000 });

	// The four show as thumbnails (transformed by /assets), in the folder.
	await tab.waitForFunction((n) => document.querySelectorAll('.grid .card').length === n, 4, { timeout: 20_000 });
	await tab.waitForFunction(() => [...document.querySelectorAll('.grid img')].every((i) => i.complete && i.naturalWidth > 0), null, { timeout: 20_000 });
	const thumbs = await tab.$$eval('.grid img', (list) => list.map((i) => ({ src: i.getAttribute('src'), w: i.naturalWidth, h: i.naturalHeight })));
	assert.equal(thumbs.length, 4);
	for (const t of thumbs) {
		assert.match(t.src, /^\/assets\/[^?]+\?width=160&height=160&fit=cover$/);
		assert.deepEqual([t.w, t.h], [160, 160], `a 160×160 thumbnail: ${JSON.stringify(t)}`);
	}
	await shot(tab, 'files');

	// Folders: one inside this one; two files moved into it; this one renamed.
	const sub = `Inside ${stamp}`;
	await tab.fill('#new-folder', sub);
	await tab.click('form:has(#new-folder) button[type=submit]');
	await tab.waitForSelector(`aside a:text-is("${sub}")`);
	for (const n of ['third', 'fourth']) await tab.check(`.card:has-text("${n} ${stamp}") .pick input`);
	await tab.selectOption('#move-to', { label: `\u00a0\u00a0${sub}` });
	await tab.click('form.move button[type=submit]');
	await tab.waitForFunction((n) => document.querySelectorAll('.grid .card').length === n, 2);
	await tab.fill('#rename-folder', `${folder} renamed`);
	await tab.click('form:has(#rename-folder) button[type=submit]');
	await tab.waitForSelector(`#files-title:text-is("${folder} renamed")`);
	await tab.click(`aside a:text-is("${sub}")`);
	await tab.waitForFunction((n) => document.querySelectorAll('.grid .card').length === n, 2);
	const subId = new URL(tab.url()).pathname.split('/').pop();
	await tab.selectOption('#folder-parent', '');
	await tab.click('form:has(#folder-parent) button[type=submit]');
	await tab.waitForSelector('.toasts p:has-text("Folder moved")');
	const adminToken = await tokenOf(adminEmail, adminPassword);
	const folders = (await call(`/folders?filter[id][_in]=${folderId},${subId}&fields=id,name,parent`, { token: adminToken })).body.data;
	assert.deepEqual(
		folders.map((f) => [f.name, f.parent]).sort(),
		[[`${folder} renamed`, null], [sub, null]].sort(),
	);
	await tab.click(`aside a:text-is("${folder} renamed")`);
	await tab.waitForFunction((n) => document.querySelectorAll('.grid .card').length === n, 2);

	// A file's page: the picture, its metadata saved (a title with markup stays text), then deleted.
	// The host titles an upload from its file name (first-x.png → "First X").
	await tab.click(`.card a:has-text("first ${stamp}")`);
	await tab.waitForSelector('#file-form');
	await tab.waitForFunction(() => document.querySelector('.preview img')?.naturalWidth > 0);
	const title = `<img src=x onerror="window.__xss=1">Clip ${stamp}`;
	await tab.fill('#file-title', title);
	await tab.click('#file-form button[type=submit]');
	await tab.waitForFunction((t) => document.querySelector('main h1')?.textContent === t, title);
	assert.equal(await tab.evaluate(() => window.__xss), undefined, 'a title is shown as text');
	const fileId = new URL(tab.url()).pathname.split('/').pop();
	const admin = await tokenOf(adminEmail, adminPassword);
	const stored = await call(`/files/${fileId}`, { token: admin });
	assert.equal(stored.body.data.title, title);
	assert.equal(stored.body.data.folder, folderId);
	await tab.click('#file-form button.danger');
	await tab.click('dialog[open] button.danger');
	await tab.waitForURL(`${origin}/admin/files/${folderId}`);
	await tab.waitForFunction((n) => document.querySelectorAll('.grid .card').length === n, 1);
	const gone = (await call(`/files/${fileId}`, { token: admin })).status;
	assert.ok(gone === 403 || gone === 404, `the file is gone: ${gone}`);
	assert.deepEqual(errors, []);
	await context.close();
});

test('access: an administrator grants a role\'s policy read on a collection in the matrix, and the member\'s GET /items goes 403 → 200 (→ 403 when taken away)', { timeout: 120_000 }, async () => {
	const admin = await tokenOf(adminEmail, adminPassword);
	const member = await tokenOf(memberEmail, memberPassword);
	const me = await call('/users/me?fields=id,role', { token: member });
	assert.ok(me.body.data.role, 'the member has a role');
	const access = await call(`/items/platform_access?filter[role][_eq]=${me.body.data.role}&fields=policy`, { token: admin });
	const policy = access.body.data[0]?.policy;
	assert.ok(policy, `the member's role has a policy: ${JSON.stringify(access.body)}`);
	// A collection of the site (the matrix lists them first) with an `id`, which the member may not read.
	const collections = (await call('/collections', { token: admin })).body.data.map((c) => c.collection).filter((c) => !c.startsWith('platform_'));
	let collection = null;
	for (const c of collections) {
		const fields = (await call(`/fields/${c}`, { token: admin })).body.data.map((f) => f.field);
		if (fields.includes('id') && (await call(`/items/${c}?limit=1`, { token: member })).status === 403) {
			collection = c;
			break;
		}
	}
	assert.ok(collection, 'a collection the member may not read');
	const memberRead = async () => call(`/items/${collection}?limit=5`, { token: member });
	assert.equal((await memberRead()).status, 403);

	const { context, tab, errors } = await adminTab();
	await tab.goto(`${origin}/admin/access/policies/${policy}`);
	const cell = `td.cell[data-collection="${collection}"][data-action="read"]`;
	const box = `#perm-${collection}-read`;
	await tab.waitForSelector(box);
	assert.equal(await tab.isChecked(box), false);
	await tab.check(box);
	await tab.waitForSelector(`${cell}[data-state="full"]`);
	const granted = await memberRead();
	assert.equal(granted.status, 200, JSON.stringify(granted.body));

	// The cell's editor: the rule is checked as JSON, then by the API (its 400 at the field).
	await tab.click(`${cell} button.edit`);
	await tab.waitForSelector('dialog.editor[open]');
	await tab.fill('#perm-rule', '{"id": ');
	await tab.waitForFunction(() => document.getElementById('perm-rule-problem').textContent.startsWith('Not valid JSON'));
	assert.equal(await tab.isDisabled('#permission-form button[type=submit]'), true);
	await tab.fill('#perm-rule', '{"no_such_field": {"_eq": 1}}');
	await tab.click('#permission-form button[type=submit]');
	await tab.waitForFunction(() => document.getElementById('perm-rule-problem').textContent.length > 0);
	const apiError = await tab.textContent('#perm-rule-problem');
	assert.match(apiError, /no_such_field|filter/, apiError);
	assert.equal(await tab.getAttribute('#perm-rule', 'aria-invalid'), 'true');
	// A rule no item passes, and only the id: the member reads nothing.
	await tab.fill('#perm-rule', '{"id": {"_null": true}}');
	await tab.uncheck('#perm-all-fields');
	await tab.check('dialog.editor .fields input[value="id"]');
	// The rule in the app's JSON editor, over the matrix.
	await tab.waitForSelector('#perm-rule[aria-invalid=false]');
	await shot(tab, 'permissions');
	await tab.click('#permission-form button[type=submit]');
	await tab.waitForSelector('dialog.editor', { state: 'detached' });
	await tab.waitForSelector(`${cell}[data-state="custom"]`);
	assert.match(await tab.textContent(`${cell} button.edit`), /1 field · rule/);
	const ruled = await memberRead();
	assert.equal(ruled.status, 200, JSON.stringify(ruled.body));
	assert.deepEqual(ruled.body.data, [], 'the rule lets no item through');
	const row = (await call(`/permissions?filter[policy][_eq]=${policy}&filter[collection][_eq]=${collection}&filter[action][_eq]=read`, { token: admin })).body.data;
	assert.equal(row.length, 1);
	assert.deepEqual(row[0].fields, ['id']);
	assert.deepEqual(row[0].permissions, { id: { _null: true } });

	await tab.uncheck(box);
	await tab.waitForSelector(`${cell}[data-state="none"]`);
	assert.equal((await memberRead()).status, 403, 'taken away again');
	// The only console errors: the API's answer 400 to the refused rule.
	assert.deepEqual(errors.filter((e) => !/status of 400/.test(e)), []);
	await context.close();
});

test('every page of the files, access and platform modules loads with no console error', { timeout: 180_000 }, async () => {
	const admin = await tokenOf(adminEmail, adminPassword);
	const first = async (path) => (await call(path, { token: admin })).body.data[0];
	const file = await first('/files?limit=1&fields=id&filter[type][_starts_with]=image');
	const video = await first('/files?limit=1&fields=id&filter[type][_starts_with]=video');
	const user = await first(`/users?limit=1&fields=id&filter[email][_eq]=${encodeURIComponent(memberEmail)}`);
	const role = await first('/roles?limit=1&fields=id&sort=name');
	const policy = await first('/policies?limit=1&fields=id&sort=name');
	const pages = [
		['/admin/files', '.grid', null],
		[`/admin/files/item/${file.id}`, '.preview img', null],
		...(video ? [[`/admin/files/item/${video.id}`, '.preview video', null]] : []),
		['/admin/access/users', 'table tbody tr', 'users'],
		[`/admin/access/users/${user.id}`, '#user-form', null],
		['/admin/access/users/+', '#user-form', null],
		['/admin/access/roles', 'table tbody tr', 'roles'],
		[`/admin/access/roles/${role.id}`, '#role-form', null],
		['/admin/access/policies', 'table tbody tr', 'policies'],
		[`/admin/access/policies/${policy.id}`, '.matrix td.cell', null],
		['/admin/platform', '#metrics .metric canvas', 'platform'],
	];
	const { context, tab, errors } = await adminTab();
	for (const [path, ready, name] of pages) {
		await tab.goto(`${origin}${path}`);
		await tab.waitForSelector(ready, { timeout: 20_000 });
		await tab.waitForLoadState('networkidle').catch(() => {});
		assert.equal(await tab.$('.error[role=alert]'), null, `${path} shows no error`);
		assert.deepEqual(await unreachableOrUnlabelled(tab), [], `${path}: every control labelled and reachable`);
		if (name === 'platform') {
			// Live: the charts gain samples as the page refreshes them.
			await tab.waitForFunction(() => /the last ([3-9]|\d\d) samples/.test(document.querySelector('#metrics [role=img]')?.getAttribute('aria-label') ?? ''), null, { timeout: 20_000 });
		}
		if (name) await shot(tab, name);
	}
	// The platform page: the health, an extension, live charts, the API by group with an operation's details.
	assert.equal(await tab.getAttribute('#health', 'data-status'), 'ok');
	assert.ok((await tab.$$('#extensions tbody tr')).length >= 1);
	const before = await tab.$$eval('#metrics .metric', (l) => l.length);
	assert.ok(before >= 1, 'metrics are charted');
	await tab.click('details.group > summary:has-text("/server")');
	await tab.click('details.op > summary:has-text("/server/health")');
	assert.match(await tab.textContent('details.op[open]'), /200|default/);
	// The user page's reset: the host accepts the request.
	await tab.goto(`${origin}/admin/access/users/${user.id}`);
	await tab.waitForSelector('#send-reset');
	await tab.click('#send-reset');
	await tab.waitForSelector(`.toasts p:has-text("reset link was sent")`, { timeout: 20_000 });
	assert.deepEqual(errors, []);
	await context.close();
});

test('access: an administrator creates a policy, a role holding it and a user of that role, then finds and edits the user', { timeout: 120_000 }, async () => {
	const admin = await tokenOf(adminEmail, adminPassword);
	const { context, tab, errors } = await adminTab();
	const name = `Editors ${stamp}`;

	await tab.goto(`${origin}/admin/access/policies/+`);
	await tab.fill('#policy-name', name);
	await tab.fill('#policy-description', 'Edit the <b>articles</b>');
	await tab.check('#policy-app');
	await tab.click('#policy-form button[type=submit]');
	await tab.waitForSelector('.matrix td.cell');
	const policyId = new URL(tab.url()).pathname.split('/').pop();
	const policy = (await call(`/policies/${policyId}`, { token: admin })).body.data;
	assert.deepEqual([policy.name, policy.description, policy.app_access, policy.admin_access], [name, 'Edit the <b>articles</b>', true, false]);

	await tab.goto(`${origin}/admin/access/roles/+`);
	await tab.fill('#role-name', name);
	await tab.check(`#role-form label:has-text("${name}") input`);
	await tab.click('#role-form button[type=submit]');
	await tab.waitForURL(/\/admin\/access\/roles\/[0-9a-f-]{36}$/);
	const roleId = new URL(tab.url()).pathname.split('/').pop();
	const rows = (await call(`/items/platform_access?filter[role][_eq]=${roleId}&fields=policy`, { token: admin })).body.data;
	assert.deepEqual(rows.map((r) => r.policy), [policyId], 'the role holds the policy');
	await tab.goto(`${origin}/admin/access/roles`);
	await tab.waitForSelector(`tr:has-text("${name}")`);
	assert.match(await tab.textContent(`tr:has-text("${name}") td:nth-child(3)`), new RegExp(name));

	const email = `editor-${stamp}@example.com`;
	await tab.goto(`${origin}/admin/access/users/+`);
	await tab.fill('#user-email', email);
	await tab.fill('#user-first-name', 'Eddie');
	await tab.selectOption('#user-role', roleId);
	await tab.fill('#user-password', `password ${stamp}`);
	await tab.click('#user-form button[type=submit]');
	await tab.waitForURL(/\/admin\/access\/users\/[0-9a-f-]{36}$/);
	await tab.goto(`${origin}/admin/access/users`);
	await tab.fill('#user-search', `editor-${stamp}`);
	await tab.waitForFunction((e) => {
		const rows = [...document.querySelectorAll('table tbody tr')];
		return rows.length === 1 && rows[0].textContent.includes(e);
	}, email);
	await tab.click(`a:text-is("${email}")`);
	await tab.waitForSelector('#user-form');
	assert.equal(await tab.inputValue('#user-role'), roleId);
	await tab.fill('#user-last-name', 'Stone');
	await tab.selectOption('#user-status', 'suspended');
	await tab.click('#user-form button[type=submit]');
	// Saved (the button is also disabled while the request is on its way).
	await tab.waitForSelector('.toasts p:has-text("User saved")');
	const user = (await call(`/users?filter[email][_eq]=${encodeURIComponent(email)}&fields=first_name,last_name,role,status`, { token: admin })).body.data;
	assert.deepEqual(user, [{ first_name: 'Eddie', last_name: 'Stone', role: roleId, status: 'suspended' }]);
	// A refused write is shown at its field: an email another user has.
	await tab.fill('#user-email', memberEmail);
	await tab.click('#user-form button[type=submit]');
	await tab.waitForFunction(() => document.getElementById('user-email-error').textContent.length > 0);
	assert.match(await tab.textContent('#user-email-error'), /unique/);
	assert.equal(await tab.getAttribute('#user-email', 'aria-invalid'), 'true');
	assert.deepEqual(errors.filter((e) => !/status of 400/.test(e)), []);
	await context.close();
});

test('each user sees the modules their policies give: a member those of /permissions/me, with only the actions they may take; an administrator all four', { timeout: 120_000 }, async () => {
	const member = await tokenOf(memberEmail, memberPassword);
	const permissions = (await call('/permissions/me', { token: member })).body.data;
	const globals = (await call('/policies/me/globals', { token: member })).body.data;
	const may = (collection, action) => globals.admin_access || ['full', 'partial'].includes(permissions[collection]?.[action]?.access);
	const sections = { users: 'platform_users', roles: 'platform_roles', policies: 'platform_policies' };
	const expected = [
		'Content',
		...(may('platform_files', 'read') ? ['Files'] : []),
		...(Object.values(sections).some((c) => may(c, 'read')) ? ['Users and access'] : []),
		...(globals.admin_access ? ['Platform'] : []),
	];
	assert.equal(globals.admin_access, false, 'the member is no administrator');
	assert.ok(expected.includes('Files') && expected.includes('Users and access'), JSON.stringify(expected));

	const { context, tab, errors } = await signedInTab(memberEmail, memberPassword);
	const asked = [];
	tab.on('request', (r) => asked.push(new URL(r.url()).pathname));
	const nav = async () => tab.$$eval('nav[aria-label=Modules] a', (links) => links.map((a) => a.textContent.trim()));
	await tab.waitForURL('**/admin/content');
	assert.deepEqual(await nav(), expected);

	// Each module shown opens with no error, offering only what the member may do.
	await tab.click('nav[aria-label=Modules] a:text-is("Files")');
	await tab.waitForSelector('.grid');
	await tab.waitForLoadState('networkidle').catch(() => {});
	assert.equal(await tab.$('.error[role=alert]'), null);
	assert.equal(!!(await tab.$('#upload-input')), may('platform_files', 'create'));
	assert.equal(!!(await tab.$('#new-folder')), may('platform_folders', 'create'));
	await tab.click('nav[aria-label=Modules] a:text-is("Users and access")');
	await tab.waitForSelector('nav.tabs a[aria-current=page]');
	const tabs = await tab.$$eval('nav.tabs a', (links) => links.map((a) => new URL(a.href).pathname.split('/').pop()));
	assert.deepEqual(tabs, Object.keys(sections).filter((s) => may(sections[s], 'read')));
	for (const section of tabs) {
		await tab.goto(`${origin}/admin/access/${section}`);
		await tab.waitForSelector('table tbody tr');
		await tab.waitForLoadState('networkidle').catch(() => {});
		assert.equal(await tab.$('.error[role=alert]'), null, `${section} shows no error`);
		const create = { users: 'Create a user', roles: 'Create a role', policies: 'Create a policy' }[section];
		assert.equal(!!(await tab.$(`a:text-is("${create}")`)), may(sections[section], 'create'), `${section}: ${create}`);
	}
	// A policy's page without the matrix (the member may not read permissions).
	await tab.click('table tbody a');
	await tab.waitForSelector('#policy-form');
	assert.equal(await tab.$('.matrix'), null);
	assert.equal(await tab.$('#policy-form button[type=submit]'), null, 'no save where they may not update');

	// The platform's page, opened by its address, says so and asks the host nothing.
	await tab.goto(`${origin}/admin/platform`);
	await tab.waitForSelector('#not-permitted');
	assert.ok(!asked.some((p) => p.startsWith('/server/')), JSON.stringify(asked.filter((p) => p.startsWith('/server/'))));
	assert.deepEqual(errors, []);
	await context.close();

	const admin = await adminTab();
	assert.deepEqual(
		await admin.tab.$$eval('nav[aria-label=Modules] a', (links) => links.map((a) => a.textContent.trim())),
		['Content', 'Files', 'Users and access', 'Platform'],
	);
	assert.deepEqual(admin.errors, []);
	await admin.context.close();
});
