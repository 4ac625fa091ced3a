// Short messages shown at the corner of the app (saved, deleted, failed).
export type Toast = { id: number; text: string; error: boolean };

export const toasts = $state<Toast[]>([]);
let next = 1;

export function toast(text: string, error = false) {
	const id = next++;
	toasts.push({ id, text, error });
	setTimeout(() => {
		const at = toasts.findIndex((t) => t.id === id);
		if (at >= 0) toasts.splice(at, 1);
	}, error ? 8000 : 4000);
}
