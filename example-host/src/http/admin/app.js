// The sign-in page of /admin: the host's session cookie (`/auth/login` in
// session mode), sign-out, a password-reset request, and at
// /admin/reset-password?token= (the mailed link) a new password.
const form = document.getElementById('sign-in');
const message = document.getElementById('message');
const signedIn = document.getElementById('signed-in');

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
	message.className = '';
	message.textContent = 'Signing in…';
	try {
		await call('/auth/login', { email: form.email.value, password: form.password.value, mode: 'session' });
		message.textContent = '';
		await const reset = document.getElementById('reset');
const resetToken = new URLSearchParams(location.search).get('token');
if (location.pathname.endsWith('/reset-password') && resetToken) {
	form.hidden = true;
	reset.hidden = false;
	const resetMessage = document.getElementById('reset-message');
	reset.addEventListener('submit', async (event) => {
		event.preventDefault();
		try {
			await call('/auth/password/reset', { token: resetToken, password: reset.password.value });
			reset.hidden = true;
			form.hidden = false;
			message.className = '';
			message.textContent = 'Your password is set: sign in with it.';
		} catch (e) {
			resetMessage.className = 'error';
			resetMessage.textContent = e.message;
		}
	});
} else {
	show();
}
	} catch (e) {
		message.className = 'error';
		message.textContent = e.message;
	}
});

document.getElementById('forgot').addEventListener('click', async () => {
	if (!form.email.value) {
		message.className = 'error';
		message.textContent = 'Enter your email first.';
		return;
	}
	try {
		await call('/auth/password/request', { email: form.email.value });
		message.className = '';
		message.textContent = 'If an account has this email, a reset link is on its way.';
	} catch (e) {
		message.className = 'error';
		message.textContent = e.message;
	}
});

document.getElementById('sign-out').addEventListener('click', async () => {
	await call('/auth/logout', { mode: 'session' }).catch(() => {});
	await const reset = document.getElementById('reset');
const resetToken = new URLSearchParams(location.search).get('token');
if (location.pathname.endsWith('/reset-password') && resetToken) {
	form.hidden = true;
	reset.hidden = false;
	const resetMessage = document.getElementById('reset-message');
	reset.addEventListener('submit', async (event) => {
		event.preventDefault();
		try {
			await call('/auth/password/reset', { token: resetToken, password: reset.password.value });
			reset.hidden = true;
			form.hidden = false;
			message.className = '';
			message.textContent = 'Your password is set: sign in with it.';
		} catch (e) {
			resetMessage.className = 'error';
			resetMessage.textContent = e.message;
		}
	});
} else {
	show();
}
});

const reset = document.getElementById('reset');
const resetToken = new URLSearchParams(location.search).get('token');
if (location.pathname.endsWith('/reset-password') && resetToken) {
	form.hidden = true;
	reset.hidden = false;
	const resetMessage = document.getElementById('reset-message');
	reset.addEventListener('submit', async (event) => {
		event.preventDefault();
		try {
			await call('/auth/password/reset', { token: resetToken, password: reset.password.value });
			reset.hidden = true;
			form.hidden = false;
			message.className = '';
			message.textContent = 'Your password is set: sign in with it.';
		} catch (e) {
			resetMessage.className = 'error';
			resetMessage.textContent = e.message;
		}
	});
} else {
	show();
}
