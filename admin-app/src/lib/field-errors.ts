// The API's errors by field, for forms. Directus names the field in
// `extensions.field`; some answers name it only in the message
// (`Value for field "email" in collection … has to be unique.`).
import { ApiError, messageOf } from './client';
import { toast } from './toast.svelte';

/** The messages of a refused write, keyed by the field each names; empty when none names one. */
export function fieldErrors(e: unknown): Record<string, string> {
	if (!(e instanceof ApiError)) return {};
	const out: Record<string, string> = {};
	for (const x of e.errors) {
		const field = x.field ?? /\bfield "([^"]+)"/.exec(x.message)?.[1] ?? /^"([^"]+)" is not/.exec(x.message)?.[1];
		if (field) out[field] = out[field] ? `${out[field]} ${x.message}` : x.message;
	}
	return out;
}

/**
 * A refused save's errors by field, for its form; a refusal that names no
 * field is shown as a toast instead.
 */
export function formErrors(e: unknown): Record<string, string> {
	const errors = fieldErrors(e);
	if (Object.keys(errors).length === 0) toast(messageOf(e), true);
	return errors;
}
