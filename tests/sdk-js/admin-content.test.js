// The admin app at /admin in a real browser: Chromium driven by
// playwright-core. Run by tests/tests/processes/admin_app.rs against a host
// it started with the demo data and two users of its own: an administrator
// and a Model (PLATFORM_ADMIN_EMAIL, PLATFORM_MODEL_EMAIL, both with
// PLATFORM_PASSWORD). Writes the screenshots of docs/admin-app
// (PLATFORM_SCREENSHOTS).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { chromium } from 'playwright-core';

import { unreachableOrUnlabelled } from './admin-a11y.js';

const url = required('PLATFORM_URL');
const executablePath = required('PLATFORM_CHROMIUM');
const adminEmail = required('PLATFORM_ADMIN_EMAIL');
const modelEmail = required('PLATFORM_MODEL_EMAIL');
const password = required('PLATFORM_PASSWORD');
const movie = required('PLATFORM_MOVIE');
const screenshots = required('PLATFORM_SCREENSHOTS');

function required(name) {
	const value = process.env[name];
	if (!value) throw new Error(`${name} is not set: run these tests through tests/tests/processes/admin_app.rs`);
	return value;
}

const origin = new URL(url).origin;
const SLUG = 'made-in-the-admin-app';

let browser;

before(async () => {
	browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
	mkdirSync(screenshots, { recursive: true });
});

after(async () => {
	await browser?.close();
});

/** A new browser context and tab; every console error and page error is kept. */
async function open() {
	const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
	const tab = await context.newPage();
	const errors = [];
	tab.on('console', (m) => {
		if (m.type() === 'error') errors.push(`${tab.url()}: ${m.text()}`);
	});
	tab.on('pageerror', (e) => errors.push(`${tab.url()}: ${e}`));
	return { context, tab, errors };
}

/** Signs in on the page shown (the app's sign-in page). */
async function signIn(tab, email) {
	await tab.waitForSelector('#sign-in');
	await tab.fill('#email', email);
	await tab.fill('#password', password);
	await tab.click('#sign-in button[type=submit]');
	await tab.waitForSelector('#signed-in');
}

/** The collections Content should list: those the caller reads, without the platform's own. */
async function readable(tab) {
	return tab.evaluate(async () => {
		const r = await fetch('/collections', { credentials: 'include' });
		const { data } = await r.json();
		return data.filter((c) => !c.meta?.system && !c.meta?.hidden).map((c) => c.collection).sort();
	});
}

async function listed(tab) {
	await tab.waitForSelector('ul.collections a');
	return (await tab.$$eval('ul.collections a', (links) => links.map((a) => new URL(a.href).pathname.split('/').pop()))).sort();
}

test('an administrator signs in, creates a video with two models and an uploaded movie, and publishes it', { timeout: 120_000 }, async () => {
	const { context, tab } = await open();
	// Signed out, a deep link shows the sign-in page, then goes back there.
	await tab.goto(`${origin}/admin/content/videos`, { waitUntil: 'commit' });
	// The first screen's times, on the page's own clock (performance.now(),
	// from the navigation's start), polled each frame: printed, not asserted.
	const signInShown = await (await tab.waitForFunction(() => document.querySelector('#sign-in') && performance.now())).jsonValue();
	assert.equal(new URL(tab.url()).pathname, '/admin/');
	await tab.screenshot({ path: join(screenshots, 'sign-in.png') });
	await tab.fill('#email', adminEmail);
	await tab.fill('#password', password);
	const submitted = await tab.evaluate(() => performance.now());
	await tab.click('#sign-in button[type=submit]');
	const listShown = await (await tab.waitForFunction(() => document.querySelector('table tbody a') && performance.now(), null, { timeout: 20_000 })).jsonValue();
	await tab.waitForURL('**/admin/content/videos');
	console.log(`first screen: navigation → sign-in form ${Math.round(signInShown)} ms; sign-in → content list ${Math.round(listShown - submitted)} ms`);
	await tab.screenshot({ path: join(screenshots, 'content-list.png') });

	await tab.click('text=Create an item');
	await tab.waitForURL((u) => u.pathname === '/admin/content/videos/+');
	// A slug another video has: the API's refusal is shown at the field.
	await tab.fill('#field-slug', 'sunset-session');
	await tab.fill('#field-title', 'Made in the admin app');
	await tab.click('form.item button[type=submit]');
	await tab.waitForSelector('#field-slug-error');
	assert.match(await tab.textContent('#field-slug-error'), /unique/i);
	assert.equal(new URL(tab.url()).pathname, '/admin/content/videos/+');
	await tab.fill('#field-slug', SLUG);
	await tab.fill('#field-upload_date', '2024-01-02T03:04');

	// The movie: uploaded, then played in the form.
	await tab.setInputFiles('#field-movie', movie);
	await tab.waitForSelector('[data-field=movie] video');
	await tab.waitForFunction(() => {
		const v = document.querySelector('[data-field=movie] video');
		return v && v.readyState >= 1 && v.duration > 0;
	});
	await tab.evaluate(() => {
		const v = document.querySelector('[data-field=movie] video');
		v.muted = true;
		return v.play();
	});
	await tab.waitForFunction(() => document.querySelector('[data-field=movie] video').currentTime > 0.2);

	// Two models, chosen by search.
	for (const name of ['Aria', 'Bianca']) {
		await tab.fill('#field-models-add', name);
		const choice = tab.locator('[data-field=models] button', { hasText: `Choose ${name}` }).first();
		await choice.click();
	}
	// Each choice shows once the search it came from has answered.
	await tab.waitForFunction(() => document.querySelectorAll('[data-field=models] li.added').length === 2);

	await tab.click('form.item button[type=submit]');
	await tab.waitForURL(/\/admin\/content\/videos\/[0-9a-f-]{36}$/);
	await tab.waitForFunction(() => document.querySelectorAll('[data-field=models] li a').length === 2);
	await tab.waitForSelector('[data-field=movie] video');
	// Tall enough for the whole form: the bar of actions sticks to the bottom.
	await tab.setViewportSize({ width: 1280, height: 1700 });
	await tab.screenshot({ path: join(screenshots, 'content-item.png') });

	// Published: the site's API lists it with its two models.
	const r = await fetch(`${origin}/svc/videos`);
	assert.equal(r.status, 200);
	const videos = await r.json();
	const list = Array.isArray(videos) ? videos : videos.data;
	const made = list.find((v) => v.slug === SLUG);
	assert.ok(made, `${SLUG} not in /svc/videos: ${JSON.stringify(list.map((v) => v.slug))}`);
	assert.equal(made.models.length, 2, JSON.stringify(made.models));
	await context.close();
});

test('a Model sees only the collections their policies let them read, and a refused write shows its error', { timeout: 60_000 }, async () => {
	const { context, tab } = await open();
	await tab.goto(`${origin}/admin/`);
	await signIn(tab, modelEmail);
	await tab.waitForURL('**/admin/content');
	const expected = await readable(tab);
	const shown = await listed(tab);
	assert.deepEqual(shown, expected);
	assert.ok(shown.includes('videos'), JSON.stringify(shown));
	assert.ok(!shown.includes('achievements') && !shown.includes('platform_permissions'), JSON.stringify(shown));

	const id = await tab.evaluate(async () => (await (await fetch('/items/videos?limit=1&fields=id')).json()).data[0].id);
	await tab.goto(`${origin}/admin/content/videos/${id}`);
	await tab.waitForSelector('#field-title');
	await tab.fill('#field-title', 'Changed by a model');
	await tab.click('form.item button[type=submit]');
	await tab.waitForSelector('#form-error');
	assert.match(await tab.textContent('#form-error'), /permission/i);
	tab.once('dialog', (d) => d.accept());
	await context.close();
});

test('an ended session goes back to the sign-in page, then to where the user was', { timeout: 60_000 }, async () => {
	const { context, tab } = await open();
	await tab.goto(`${origin}/admin/content/videos`);
	await signIn(tab, adminEmail);
	await tab.waitForSelector('table tbody a');
	// The session ends on the host (signed out elsewhere): the browser's
	// cookie no longer signs in, and the next call answers 401.
	const cookie = (await context.cookies(origin)).find((c) => c.name === 'directus_session_token');
	assert.ok(cookie, 'a session cookie');
	const ended = await fetch(`${origin}/auth/logout`, {
		method: 'POST',
		headers: { cookie: `${cookie.name}=${cookie.value}`, origin, 'content-type': 'application/json' },
		body: JSON.stringify({ mode: 'session' }),
	});
	assert.equal(ended.status, 204);
	const item = await tab.getAttribute('table tbody a >> nth=0', 'href');
	await tab.click('table tbody a >> nth=0');
	await tab.waitForSelector('#sign-in');
	assert.equal(new URL(tab.url()).pathname, '/admin/');
	await signIn(tab, adminEmail);
	await tab.waitForURL((u) => u.pathname === item);
	await tab.waitForSelector('form.item');
	await context.close();
});

test('leaving unsaved changes asks first', { timeout: 60_000 }, async () => {
	const { context, tab } = await open();
	await tab.goto(`${origin}/admin/content/articles`);
	await signIn(tab, adminEmail);
	await tab.waitForSelector('table tbody a');
	await tab.click('table tbody a >> nth=0');
	await tab.waitForSelector('#field-title');
	const item = tab.url();
	await tab.fill('#field-title', 'An unsaved title');

	// A link: refused, the page and its edit stay.
	let asked = 0;
	tab.once('dialog', (d) => {
		asked += 1;
		d.dismiss();
	});
	await tab.click('nav[aria-label=Modules] >> text=Files');
	assert.equal(asked, 1);
	assert.equal(tab.url(), item);
	assert.equal(await tab.inputValue('#field-title'), 'An unsaved title');

	// The browser's back button: refused too.
	tab.once('dialog', (d) => {
		asked += 1;
		d.dismiss();
	});
	await tab.goBack();
	await tab.waitForFunction(() => document.getElementById('field-title') !== null);
	assert.equal(asked, 2);
	assert.equal(await tab.inputValue('#field-title'), 'An unsaved title');

	// Agreed: gone, unsaved.
	tab.once('dialog', (d) => {
		asked += 1;
		d.accept();
	});
	await tab.click('nav[aria-label=Modules] >> text=Files');
	await tab.waitForURL('**/admin/files');
	assert.equal(asked, 3);
	await context.close();
});

test('every page of the content module loads with no console error', { timeout: 240_000 }, async () => {
	const { context, tab, errors } = await open();
	await tab.goto(`${origin}/admin/`);
	await signIn(tab, adminEmail);
	await tab.waitForURL('**/admin/content');
	// The sign-in page asks the host nothing before a first sign-in.
	assert.deepEqual(errors, []);
	const collections = await listed(tab);
	assert.deepEqual(collections, await readable(tab));
	const visited = [];
	const accessible = [];
	// Each page: its controls labelled and reachable by the keyboard.
	const seen = async (path) => {
		visited.push(path);
		accessible.push(...(await unreachableOrUnlabelled(tab)).map((p) => `${path}: ${p}`));
	};
	for (const c of collections) {
		await tab.goto(`${origin}/admin/content/${c}`);
		await tab.waitForSelector('table tbody');
		await tab.waitForLoadState('networkidle');
		await seen(`/admin/content/${c}`);
		const first = await tab.$('table tbody a');
		if (first) {
			await first.click();
			await tab.waitForSelector('form.item');
			await tab.waitForLoadState('networkidle');
			await seen(new URL(tab.url()).pathname);
		}
		await tab.goto(`${origin}/admin/content/${c}/+`);
		await tab.waitForSelector('form.item');
		await tab.waitForLoadState('networkidle');
		await seen(`/admin/content/${c}/+`);
		const alerts = await tab.$$eval('[role=alert]', (all) => all.map((a) => a.textContent.trim()).filter(Boolean));
		assert.deepEqual(alerts, [], `${c}: ${alerts}`);
	}
	assert.deepEqual(errors, [], `visited ${visited.length} pages`);
	assert.deepEqual(accessible, [], 'every control labelled and reachable');
	console.log(`visited ${visited.length} pages of the content module`);
	await context.close();
});
