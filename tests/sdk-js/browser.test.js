// The site in a real browser: Debian's Chromium, driven by playwright-core
// (which brings no browser of its own). Run by tests/tests/browser.rs
// against a host it started, where a member (PLATFORM_EMAIL,
// PLATFORM_PASSWORD) uploaded a private image (PLATFORM_IMAGE_ID, 300×200)
// and a movie (PLATFORM_MOVIE_ID, WebM, 6 s) that anonymous callers may not
// read; PLATFORM_CHROMIUM is the browser to launch. The member also
// uploaded an HTML page (PLATFORM_PAGE_ID), an SVG (PLATFORM_SVG_ID) and a
// text/plain file whose bytes are HTML (PLATFORM_TEXT_ID), each with a
// script that would call `/xss-marker` and write localStorage. The host
// serves no HTML: the pages are fulfilled by the browser itself on the
// host's origin.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { chromium } from 'playwright-core';

const url = required('PLATFORM_URL');
const email = required('PLATFORM_EMAIL');
const password = required('PLATFORM_PASSWORD');
const imageId = required('PLATFORM_IMAGE_ID');
const movieId = required('PLATFORM_MOVIE_ID');
const executablePath = required('PLATFORM_CHROMIUM');
const uploadedPages = [required('PLATFORM_PAGE_ID'), required('PLATFORM_SVG_ID'), required('PLATFORM_TEXT_ID')];

function required(name) {
	const value = process.env[name];
	if (!value) throw new Error(`${name} is not set: run these tests through tests/tests/browser.rs`);
	return value;
}

const origin = new URL(url).origin;

/** The site's pages, by path on the host's origin. */
const pages = {
	'/browser-test.html': '<!doctype html><title>Sign in</title><p>Sign in</p>',
	'/browser-test-media.html': `<!doctype html><title>Media</title>
<img src="/assets/${imageId}?width=64&format=webp" alt="picture">
<video src="/assets/${movieId}" muted preload="auto"></video>`,
	'/browser-test-frames.html': `<!doctype html><title>Frames</title>
${uploadedPages.map((id) => `<iframe src="/assets/${id}"></iframe><object data="/assets/${id}"></object>`).join('\n')}`,
	// The marker works: a script of the site's own origin reaches it.
	'/browser-test-control.html': `<!doctype html><title>Control</title>
<script>fetch('/xss-marker?control')</script>`,
};

let browser;
let context;
let page;

before(async () => {
	browser = await chromium.launch({
		executablePath,
		headless: true,
		args: [
			'--no-sandbox',
			'--disable-gpu',
			'--disable-quic',
			'--no-first-run',
			// Without these, Chromium keeps calling out to the network.
			'--disable-background-networking',
			'--disable-component-update',
			'--disable-sync',
			'--autoplay-policy=no-user-gesture-required',
		],
	});
	context = await browser.newContext();
	page = await context.newPage();
	for (const [path, html] of Object.entries(pages)) {
		await page.route(`${origin}${path}`, (route) =>
			route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: html }),
		);
	}
});

after(async () => {
	await browser?.close();
});

test('the member signs in in the browser: an HttpOnly session cookie, and /users/me by it', { timeout: 60_000 }, async () => {
	await page.goto(`${origin}/browser-test.html`);
	const login = await page.evaluate(
		async ({ email, password }) => {
			const r = await fetch('/auth/login', {
				method: 'POST',
				credentials: 'include',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify({ email, password, mode: 'session' }),
			});
			return { status: r.status, body: await r.json() };
		},
		{ email, password },
	);
	assert.equal(login.status, 200, JSON.stringify(login.body));
	assert.equal(login.body.data.access_token, undefined, 'the token travels in the cookie only');

	const cookies = await context.cookies(origin);
	const session = cookies.find((c) => c.name === 'directus_session_token');
	assert.ok(session, `a session cookie: ${cookies.map((c) => c.name)}`);
	assert.equal(session.httpOnly, true);
	assert.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read it');

	const me = await page.evaluate(async () => {
		const r = await fetch('/users/me', { credentials: 'include' });
		return { status: r.status, body: await r.json() };
	});
	assert.equal(me.status, 200, JSON.stringify(me.body));
	assert.equal(me.body.data.email, email);
});

test('<img> and <video> load the private files by the cookie; the movie plays through ranged reads', { timeout: 60_000 }, async () => {
	const movieAnswers = [];
	page.on('response', (response) => {
		if (new URL(response.url()).pathname === `/assets/${movieId}`) {
			movieAnswers.push(
				response
					.request()
					.headerValue('range')
					.then((range) => ({ range, status: response.status() })),
			);
		}
	});
	await page.goto(`${origin}/browser-test-media.html`);

	await page.waitForFunction(() => document.querySelector('img').complete, null, { timeout: 20_000 });
	const img = await page.evaluate(() => {
		const img = document.querySelector('img');
		return { complete: img.complete, naturalWidth: img.naturalWidth, src: img.currentSrc };
	});
	assert.equal(img.complete, true);
	assert.equal(img.naturalWidth, 64, `the transformed picture loaded: ${JSON.stringify(img)}`);
	assert.ok(!img.src.includes('access_token'), img.src);

	const played = await page.evaluate(async () => {
		const video = document.querySelector('video');
		await video.play();
		const deadline = Date.now() + 20_000;
		while (video.currentTime <= 1.2 && !video.error && Date.now() < deadline) {
			await new Promise((resolve) => setTimeout(resolve, 50));
		}
		return { currentTime: video.currentTime, duration: video.duration, error: video.error?.code ?? null };
	});
	assert.equal(played.error, null, JSON.stringify(played));
	assert.ok(played.currentTime > 1, `the movie played past 1 s: ${JSON.stringify(played)}`);
	assert.ok(played.duration > 5, JSON.stringify(played));

	const answers = await Promise.all(movieAnswers);
	assert.ok(
		answers.some((a) => a.range && a.status === 206),
		`a ranged read answered 206: ${JSON.stringify(answers)}`,
	);

	// The cookie is what opens them: the same reads without it are refused.
	const without = await page.evaluate(
		async (ids) =>
			Promise.all(ids.map(async (id) => (await fetch(`/assets/${id}`, { credentials: 'omit' })).status)),
		[imageId, movieId],
	);
	assert.deepEqual(without, [403, 403]);
});

test('the page uploads a file by the cookie (multipart, from its own origin)', { timeout: 60_000 }, async () => {
	const upload = await page.evaluate(async () => {
		const canvas = document.createElement('canvas');
		canvas.width = 48;
		canvas.height = 32;
		const g = canvas.getContext('2d');
		g.fillStyle = '#3a7bd5';
		g.fillRect(0, 0, 48, 32);
		const blob = await new Promise((resolve) => canvas.toBlob(resolve, 'image/png'));
		const form = new FormData();
		form.append('title', 'Avatar from the browser');
		form.append('file', blob, 'avatar.png');
		const r = await fetch('/files', { method: 'POST', credentials: 'include', body: form });
		return { status: r.status, body: await r.json() };
	});
	assert.equal(upload.status, 200, JSON.stringify(upload.body));
	assert.equal(upload.body.data.title, 'Avatar from the browser');
	assert.equal(upload.body.data.type, 'image/png');
	assert.equal(upload.body.data.width, 48);
	assert.equal(upload.body.data.height, 32);
});

test('uploaded pages run nothing on the site\'s origin, opened or framed by the signed-in member', { timeout: 60_000 }, async () => {
	const marks = [];
	await page.route(`${origin}/xss-marker**`, (route) => {
		marks.push(new URL(route.request().url()).search);
		return route.fulfill({ status: 204 });
	});
	await page.goto(`${origin}/browser-test-control.html`);
	await page.waitForFunction(() => document.readyState === 'complete');
	await expectMarks(marks, ['?control']);

	const opened = [];
	for (const id of uploadedPages) {
		// Opened as a link to it would be: an attachment is a download,
		// which the navigation reports as aborted.
		try {
			const response = await page.goto(`${origin}/assets/${id}`, { timeout: 10_000 });
			opened.push({ id, status: response?.status(), type: response?.headers()['content-type'] });
		} catch (e) {
			opened.push({ id, download: true, error: String(e.message).split('\n')[0] });
		}
		await page.waitForTimeout(300);
	}
	await page.goto(`${origin}/browser-test-frames.html`);
	await page.waitForTimeout(1_500);
	await page.goto(`${origin}/browser-test.html`);
	const stored = await page.evaluate(() => localStorage.getItem('xss'));
	assert.deepEqual(marks, ['?control'], `an uploaded script ran: ${JSON.stringify({ marks, opened })}`);
	assert.equal(stored, null, JSON.stringify(opened));
	// The member is still signed in, and nothing was done in their name.
	const me = await page.evaluate(async () => (await fetch('/users/me', { credentials: 'include' })).status);
	assert.equal(me, 200);
});

/** Waits (at most 5 s) until `marks` holds `expected`. */
async function expectMarks(marks, expected) {
	const deadline = Date.now() + 5_000;
	while (marks.length < expected.length && Date.now() < deadline) {
		await new Promise((resolve) => setTimeout(resolve, 50));
	}
	assert.deepEqual(marks, expected);
}
