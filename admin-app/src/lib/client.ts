// The platform's client: the real @directus/sdk on the host's session cookie
// (`/auth/login` in session mode; the browser sends the cookie), a raw
// `api()` helper for what the SDK has no command for, and one error type
// made from Directus' `errors[]`.
import { authentication, createDirectus, rest, type RestCommand } from '@directus/sdk';

export const client = createDirectus(location.origin)
	.with(authentication('session', { credentials: 'include', autoRefresh: false }))
	.with(rest({ credentials: 'include' }));

/** An error the API answered: its first message, the field it names, and all of them. */
export class ApiError extends Error {
	status: number;
	code: string | undefined;
	field: string | undefined;
	errors: { message: string; code?: string; field?: string }[];
	constructor(status: number, errors: { message?: string; extensions?: Record<string, unknown> }[]) {
		const list = errors.map((e) => ({
			message: String(e.message ?? `request failed (${status})`),
			code: typeof e.extensions?.code === 'string' ? e.extensions.code : undefined,
			field: typeof e.extensions?.field === 'string' ? e.extensions.field : undefined,
		}));
		if (list.length === 0) list.push({ message: `request failed (${status})`, code: undefined, field: undefined });
		super(list[0].message);
		this.status = status;
		this.code = list[0].code;
		this.field = list[0].field;
		this.errors = list;
	}
	/** The messages about one field. */
	at(field: string): string | undefined {
		const found = this.errors.filter((e) => e.field === field).map((e) => e.message);
		return found.length ? found.join(' ') : undefined;
	}
}

let unauthorized: () => void = () => {};

/** What runs when a call answers 401 (the session's handler: back to sign-in). */
export function onUnauthorized(handler: () => void) {
	unauthorized = handler;
}

/** Any thrown value as an ApiError (the SDK throws `{ errors, response }`). */
export function toApiError(e: unknown, fallbackStatus = 0): ApiError {
	if (e instanceof ApiError) return e;
	const shaped = e as { errors?: unknown; response?: Response };
	if (shaped && Array.isArray(shaped.errors)) {
		return new ApiError(shaped.response?.status ?? fallbackStatus, shaped.errors as never);
	}
	return new ApiError(fallbackStatus, [{ message: e instanceof Error ? e.message : String(e) }]);
}

function signal401(error: ApiError, quiet: boolean) {
	if (error.status === 401 && !quiet) unauthorized();
}

/** Runs an SDK command; errors as ApiError, a 401 back to sign-in. */
export async function request<T>(command: RestCommand<T, never>, opts: { quiet401?: boolean } = {}): Promise<T> {
	try {
		return await client.request(command as never);
	} catch (e) {
		const error = toApiError(e);
		signal401(error, opts.quiet401 ?? false);
		throw error;
	}
}

/** A raw call: JSON in and out, `data` of the answer; errors as ApiError. */
export async function api<T>(path: string, init: RequestInit & { json?: unknown; quiet401?: boolean } = {}): Promise<T> {
	const { json, quiet401, ...rest } = init;
	const headers = new Headers(rest.headers);
	if (json !== undefined) headers.set('content-type', 'application/json');
	const r = await fetch(path, {
		...rest,
		headers,
		credentials: 'include',
		body: json !== undefined ? JSON.stringify(json) : rest.body,
	});
	const text = await r.text();
	let body: { data?: T; errors?: never[] } = {};
	try {
		body = text ? JSON.parse(text) : {};
	} catch {
		body = {};
	}
	if (!r.ok) {
		const error = new ApiError(r.status, body.errors ?? []);
		signal401(error, quiet401 ?? false);
		throw error;
	}
	return body.data as T;
}

/** A message for any thrown value. */
export function messageOf(e: unknown): string {
	return e instanceof Error ? e.message : String(e);
}
