// Uploads by XMLHttpRequest: fetch() reports no upload progress. One
// multipart POST /files per file, the folder first (the host reads the
// fields before the file, as Directus does).
import { api, ApiError } from '../../lib/client';

export type FileRecord = {
	id: string;
	title: string | null;
	type: string | null;
	filename_download: string;
	folder: string | null;
	width?: number | null;
	height?: number | null;
	filesize?: number | null;
	duration?: number | null;
	description?: string | null;
	uploaded_on?: string | null;
};

export function uploadFile(file: File, folder: string | null, onProgress: (loaded: number, total: number) => void): Promise<FileRecord> {
	return new Promise((resolve, reject) => {
		const form = new FormData();
		if (folder) form.append('folder', folder);
		form.append('file', file, file.name);
		const xhr = new XMLHttpRequest();
		xhr.open('POST', '/files');
		xhr.withCredentials = true;
		xhr.responseType = 'text';
		xhr.upload.onprogress = (e) => {
			if (e.lengthComputable) onProgress(e.loaded, e.total);
		};
		xhr.onload = () => {
			let body: { data?: FileRecord; errors?: never[] } = {};
			try {
				body = xhr.responseText ? JSON.parse(xhr.responseText) : {};
			} catch {
				body = {};
			}
			if (xhr.status >= 200 && xhr.status < 300 && body.data) {
				onProgress(file.size, file.size);
				resolve(body.data);
				return;
			}
			const error = new ApiError(xhr.status, body.errors ?? []);
			// Let the session see a lapsed cookie (back to sign-in).
			if (xhr.status === 401) api('/users/me').catch(() => {});
			reject(error);
		};
		xhr.onerror = () => reject(new ApiError(0, [{ message: `the upload of ${file.name} failed (network)` }]));
		xhr.send(form);
	});
}

/** Types the host's /assets transforms can make a thumbnail of. */
export function isRaster(type: string | null | undefined): boolean {
	return !!type && /^image\/(jpeg|png|webp|gif|avif|tiff)$/.test(type);
}

export function thumbnail(id: string, size = 160): string {
	return `/assets/${encodeURIComponent(id)}?width=${size}&height=${size}&fit=cover`;
}

export function formatBytes(n: number | null | undefined): string {
	if (n == null) return '';
	if (n < 1024) return `${n} B`;
	if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
	return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export type Folder = { id: string; name: string; parent: string | null };

/** Folders as an indented list: each after its parent, with its depth. */
export function folderTree(folders: Folder[]): { folder: Folder; depth: number }[] {
	const out: { folder: Folder; depth: number }[] = [];
	const ids = new Set(folders.map((f) => f.id));
	const walk = (parent: string | null, depth: number) => {
		const children = folders
			.filter((f) => (parent === null ? f.parent === null || !ids.has(f.parent) : f.parent === parent))
			.sort((a, b) => a.name.localeCompare(b.name));
		for (const f of children) {
			if (out.some((o) => o.folder.id === f.id)) continue;
			out.push({ folder: f, depth });
			walk(f.id, depth + 1);
		}
	};
	walk(null, 0);
	return out;
}
