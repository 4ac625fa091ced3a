// The admin app's forgotten password in a real browser (Chromium, driven
// by playwright-core): a user asks for a reset on the sign-in page, the
// host mails the link (to a real SMTP server on loopback, whose messages
// PLATFORM_MAIL_DIR holds, one JSON file each), the link's page sets a new
// password, and the user signs in with it, not with the old one. Run by
// tests/tests/processes/admin_app.rs.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { chromium } from 'playwright-core';

const url = required('PLATFORM_URL');
const executablePath = required('PLATFORM_CHROMIUM');
const email = required('PLATFORM_USER_EMAIL');
const oldPassword = required('PLATFORM_PASSWORD');
const mailDir = required('PLATFORM_MAIL_DIR');

function required(name) {
	const value = process.env[name];
	if (!value) throw new Error(`${name} is not set: run these tests through tests/tests/processes/admin_app.rs`);
	return value;
}

const origin = new URL(url).origin;

let browser;

before(async () => {
	browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
});

after(async () => {
	await browser?.close();
});

/** The reset token of the newest message to `to`, waiting for it to come. */
async function mailedToken(to) {
	const deadline = Date.now() + 20_000;
	while (Date.now() < deadline) {
		let names = [];
		try {
			names = readdirSync(mailDir).filter((n) => n.endsWith('.json')).sort();
		} catch {
			// The folder is made with the first message.
		}
		for (const name of names.reverse()) {
			const mail = JSON.parse(readFileSync(join(mailDir, name), 'utf8'));
			const match = /reset-password\?token=([^\s&]+)/.exec(mail.text ?? '');
			if ((mail.to ?? []).includes(to) && match) return decodeURIComponent(match[1]);
		}
		await new Promise((r) => setTimeout(r, 100));
	}
	throw new Error(`no reset mail to ${to} in ${mailDir}`);
}

async function signIn(tab, password) {
	await tab.goto(`${origin}/admin/`);
	await tab.waitForSelector('#sign-in');
	await tab.fill('#email', email);
	await tab.fill('#password', password);
	await tab.click('#sign-in button[type=submit]');
}

test('a forgotten password is reset from the mailed link, and only the new one signs in', { timeout: 120_000 }, async () => {
	const context = await browser.newContext();
	const tab = await context.newPage();
	const errors = [];
	tab.on('console', (m) => {
		if (m.type() === 'error') errors.push(`${tab.url()}: ${m.text()}`);
	});
	tab.on('pageerror', (e) => errors.push(`${tab.url()}: ${e}`));

	await tab.goto(`${origin}/admin/`);
	await tab.waitForSelector('#sign-in');
	await tab.fill('#email', email);
	await tab.click('#forgot');
	await tab.waitForFunction(() => /reset link is on its way/.test(document.getElementById('message')?.textContent ?? ''));
	const token = await mailedToken(email);

	// The mailed link names the host's public URL: its path and token, here.
	await tab.goto(`${origin}/admin/reset-password?token=${encodeURIComponent(token)}`);
	await tab.waitForSelector('#reset');
	const fresh = `${oldPassword} renewed`;
	await tab.fill('#new-password', fresh);
	await tab.click('#reset button[type=submit]');
	await tab.waitForFunction(() => /password is set/.test(document.getElementById('reset-message')?.textContent ?? ''));
	assert.deepEqual(errors, []);

	// The old password no longer signs in; the new one does.
	await signIn(tab, oldPassword);
	await tab.waitForFunction(() => (document.getElementById('message')?.textContent ?? '').length > 0);
	assert.equal(await tab.$('#signed-in'), null);
	await signIn(tab, fresh);
	await tab.waitForSelector('#signed-in');
	await context.close();
});
