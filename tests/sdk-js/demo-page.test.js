// The demo as the site's pages read it, in a real browser: Chromium driven
// by playwright-core. Run by tests/tests/browser.rs against a host it
// started with the demo data; PLATFORM_URL says where, PLATFORM_CHROMIUM
// which browser. A page of the host's origin lists what the site's
// magazine, model and video pages show (tags, avatars, article covers,
// movie lengths) as the site's own code would: `tags.join` throws on
// null, an image with no file is broken.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { chromium } from 'playwright-core';

const url = required('PLATFORM_URL');
const executablePath = required('PLATFORM_CHROMIUM');

function required(name) {
	const value = process.env[name];
	if (!value) throw new Error(`${name} is not set: run these tests through tests/tests/browser.rs`);
	return value;
}

const origin = new URL(url).origin;

const page = `<!doctype html><title>Demo</title><main id="out"></main>
<script type="module">
const out = document.getElementById('out');
const read = async (path) => {
	const r = await fetch(path);
	if (!r.ok) throw new Error(path + ': ' + r.status);
	return (await r.json()).data;
};
const seconds = (s) => new Date(s * 1000).toISOString().slice(11, 19);
try {
	const models = await read('/items/platform_users?fields=first_name,avatar,tags,join_date&filter[slug][_nnull]=true');
	const articles = await read('/items/articles?fields=title,image,tags');
	const videos = await read('/items/videos?fields=title,tags,movie.duration');
	const html = [];
	for (const m of models) {
		html.push('<section class="model"><img class="avatar" src="/assets/' + m.avatar + '?width=64&format=webp">'
			+ '<h2>' + m.first_name + '</h2><p class="tags">' + m.tags.join(', ') + '</p>'
			+ '<p class="joined">Joined ' + new Date(m.join_date).getFullYear() + '</p></section>');
	}
	for (const a of articles) {
		html.push('<article><img class="cover" src="/assets/' + a.image + '?width=320"><h2>' + a.title + '</h2>'
			+ '<p class="tags">' + a.tags.join(', ') + '</p></article>');
	}
	for (const v of videos) {
		html.push('<div class="video"><h3>' + v.title + '</h3><p class="tags">' + v.tags.join(', ') + '</p>'
			+ '<p class="duration">' + seconds(v.movie ? v.movie.duration : 0) + '</p></div>');
	}
	out.innerHTML = html.join('');
	document.body.dataset.counts = JSON.stringify({ models: models.length, articles: articles.length, videos: videos.length });
} catch (e) {
	document.body.dataset.error = String(e);
}
document.body.dataset.done = 'yes';
</script>`;

let browser;

before(async () => {
	browser = await chromium.launch({
		executablePath,
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
			'--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
});

after(async () => {
	await browser?.close();
});

test('the demo\'s pages show tags, avatars, covers and movie lengths, with no broken image and no null list', { timeout: 60_000 }, async () => {
	const context = await browser.newContext();
	const tab = await context.newPage();
	const errors = [];
	tab.on('pageerror', (e) => errors.push(String(e)));
	await tab.route(`${origin}/demo-page.html`, (route) =>
		route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: page }),
	);
	await tab.goto(`${origin}/demo-page.html`);
	await tab.waitForFunction(() => document.body.dataset.done === 'yes', null, { timeout: 20_000 });
	const state = await tab.evaluate(() => ({ error: document.body.dataset.error, counts: document.body.dataset.counts }));
	assert.equal(state.error, undefined, `the page failed: ${state.error}`);
	assert.deepEqual(errors, []);
	const counts = JSON.parse(state.counts);
	assert.ok(counts.models >= 3 && counts.articles >= 3 && counts.videos >= 5, state.counts);

	await tab.waitForFunction(() => [...document.images].every((img) => img.complete), null, { timeout: 20_000 });
	const images = await tab.evaluate(() => [...document.images].map((img) => ({
		kind: img.className, src: img.getAttribute('src'), width: img.naturalWidth,
	})));
	assert.equal(images.filter((i) => i.kind === 'avatar').length, counts.models);
	assert.equal(images.filter((i) => i.kind === 'cover').length, counts.articles);
	const broken = images.filter((i) => i.width === 0);
	assert.deepEqual(broken, [], 'every avatar and cover loads');

	const text = await tab.evaluate(() => document.getElementById('out').innerText);
	assert.ok(!/\bnull\b|\bundefined\b/.test(text), text);
	assert.ok(!text.includes('Joined 1970'), 'the models have join dates');
	const durations = await tab.evaluate(() => [...document.querySelectorAll('.duration')].map((d) => d.textContent));
	assert.ok(durations.length > 0 && durations.every((d) => d === '00:00:06'), JSON.stringify(durations));
	const tags = await tab.evaluate(() => [...document.querySelectorAll('.tags')].map((t) => t.textContent));
	assert.ok(tags.every((t) => t.length > 0), JSON.stringify(tags));
	await context.close();
});

test('/admin signs in on the session cookie, refuses a wrong password, and signs out', { timeout: 60_000 }, async () => {
	const context = await browser.newContext();
	const tab = await context.newPage();
	const errors = [];
	tab.on('pageerror', (e) => errors.push(String(e)));
	await tab.goto(`${origin}/admin`);
	assert.equal(new URL(tab.url()).pathname, '/admin/');
	await tab.fill('#email', 'victor@demo.local');
	await tab.fill('#password', 'not the password');
	await tab.click('#sign-in button[type=submit]');
	await tab.waitForFunction(() => document.getElementById('message').className === 'error');
	await tab.fill('#password', 'demo-password');
	await tab.click('#sign-in button[type=submit]');
	await tab.waitForSelector('#signed-in:not([hidden])');
	assert.equal(await tab.textContent('#who'), 'Victor <victor@demo.local>');
	assert.equal(await tab.textContent('#role'), 'Viewer');
	const cookies = await context.cookies(origin);
	assert.ok(cookies.some((c) => c.name === 'directus_session_token' && c.httpOnly), 'an HttpOnly session cookie');
	// A new tab of the same browser is signed in by the cookie.
	const again = await context.newPage();
	await again.goto(`${origin}/admin/`);
	await again.waitForSelector('#signed-in:not([hidden])');
	await again.close();
	await tab.click('#sign-out');
	await tab.waitForSelector('#sign-in:not([hidden])');
	assert.deepEqual(errors, []);
	await context.close();
});
