// The sign-in page of /admin: the host's session cookie (`/auth/login` in
// session mode), sign-out, a password-reset request, and at
// /admin/reset-password?token= (the mailed link) a new password.
const form = document.getElementById('sign-in');
const message = document.getElementById('message');
const signedIn = document.getElementById('signed-in');
const reset = document.getElementById('reset');

async function call(path, body) {
	const r = await fetch(path, {
		method: body === undefined ? 'GET' : 'POST',
		credentials: 'include',
		headers: body === undefined ? {} : { 'content-type': 'application/json' },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await r.text();
	const json = text ? JSON.parse(text) : {};
	if (!r.ok) throw new Error(json.errors?.[0]?.message ?? `${r.status}`);
	return json.data;
}

function say(element, text, error = false) {
	element.className = error ? 'error' : '';
	element.textContent = text;
}

async function show() {
	try {
		const me = await call('/users/me?fields=email,first_name,role.name');
		document.getElementById('who').textContent = me.first_name ? `${me.first_name} <${me.email}>` : me.email;
		document.getElementById('role').textContent = me.role?.name ?? 'no role';
		form.hidden = true;
		signedIn.hidden = false;
	} catch {
		form.hidden = false;
		signedIn.hidden = true;
	}
}

form.addEventListener('submit', async (event) => {
	event.preventDefault();
	say(message, 'Signing in…');
	try {
		await call('/auth/login', { email: form.email.value, password: form.password.value, mode: 'session' });
		say(message, '');
		await show();
	} catch (e) {
		say(message, e.message, true);
	}
});

document.getElementById('forgot').addEventListener('click', async () => {
	if (!form.email.value) {
		say(message, 'Enter your email first.', true);
		return;
	}
	try {
		await call('/auth/password/request', { email: form.email.value });
		say(message, 'If an account has this email, a reset link is on its way.');
	} catch (e) {
		say(message, e.message, true);
	}
});

document.getElementById('sign-out').addEventListener('click', async () => {
	await call('/auth/logout', { mode: 'session' }).catch(() => {});
	await show();
});

reset.addEventListener('submit', async (event) => {
	event.preventDefault();
	const token = new URLSearchParams(location.search).get('token');
	try {
		await call('/auth/password/reset', { token, password: reset.password.value });
		reset.hidden = true;
		form.hidden = false;
		say(message, 'Your password is set: sign in with it.');
	} catch (e) {
		say(document.getElementById('reset-message'), e.message, true);
	}
});

if (location.pathname.endsWith('/reset-password') && new URLSearchParams(location.search).has('token')) {
	form.hidden = true;
	reset.hidden = false;
} else {
	show();
}
