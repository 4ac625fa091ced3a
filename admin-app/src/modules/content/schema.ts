// The data model the caller may read (/collections, /fields, /relations),
// read once per signed-in user, and what the content module derives from it:
// which collections Content lists, each field's widget, its relations, and
// how an item is named.
import { readCollections, readFields, readRelations } from '@directus/sdk';

import { request } from '../../lib/client';

export type FieldMeta = {
	interface?: string | null;
	special?: string[] | null;
	readonly?: boolean;
	hidden?: boolean;
	required?: boolean;
	sort?: number | null;
	note?: string | null;
	options?: { choices?: { text: string; value: unknown }[] } & Record<string, unknown>;
};

export type Field = {
	collection: string;
	field: string;
	type: string;
	meta: FieldMeta | null;
	schema: { is_primary_key?: boolean; is_nullable?: boolean; foreign_key_table?: string | null } | null;
};

export type Collection = {
	collection: string;
	meta: { system?: boolean; hidden?: boolean; note?: string | null; display_template?: string | null; singleton?: boolean } | null;
};

export type Relation = {
	collection: string;
	field: string;
	related_collection: string | null;
	meta: { one_field?: string | null; junction_field?: string | null } | null;
};

/** The widget a field is edited with. */
export type Widget =
	| 'text'
	| 'textarea'
	| 'number'
	| 'toggle'
	| 'datetime'
	| 'date'
	| 'time'
	| 'select'
	| 'json'
	| 'timeline'
	| 'reference'
	| 'file'
	| 'o2m'
	| 'm2m';

export type Schema = {
	collections: Collection[];
	fields: Field[];
	relations: Relation[];
};

let cached: { key: string; schema: Promise<Schema> } | null = null;

/** The data model as `user` may read it (read once per user). */
export function loadSchema(user: string): Promise<Schema> {
	if (cached?.key !== user) {
		const schema = Promise.all([
			request(readCollections() as never) as Promise<Collection[]>,
			request(readFields() as never) as Promise<Field[]>,
			request(readRelations() as never) as Promise<Relation[]>,
		]).then(([collections, fields, relations]) => ({ collections, fields, relations }));
		schema.catch(() => {
			cached = null;
		});
		cached = { key: user, schema };
	}
	return cached.schema;
}

/** The collections Content lists: the caller's, without the platform's own. */
export function contentCollections(s: Schema): Collection[] {
	return s.collections
		.filter((c) => !c.meta?.system && !c.meta?.hidden)
		.sort((a, b) => a.collection.localeCompare(b.collection));
}

export function fieldsOf(s: Schema, collection: string): Field[] {
	return s.fields
		.filter((f) => f.collection === collection)
		.sort((a, b) => (a.meta?.sort ?? 1e9) - (b.meta?.sort ?? 1e9));
}

export function primaryKey(s: Schema, collection: string): string {
	return fieldsOf(s, collection).find((f) => f.schema?.is_primary_key)?.field ?? 'id';
}

export function isAlias(f: Field): boolean {
	return f.type === 'alias';
}

/** The collection an m2o or file field points at. */
export function relatedOf(s: Schema, f: Field): string | null {
	const r = s.relations.find((r) => r.collection === f.collection && r.field === f.field);
	return r?.related_collection ?? f.schema?.foreign_key_table ?? null;
}

/** An o2m alias: the related collection and its field pointing back here. */
export function o2mOf(s: Schema, f: Field): { collection: string; field: string } | null {
	const r = s.relations.find((r) => r.related_collection === f.collection && r.meta?.one_field === f.field);
	return r ? { collection: r.collection, field: r.field } : null;
}

/** An m2m alias: its junction (with the field pointing here and the one to the other side) and the other side. */
export function m2mOf(
	s: Schema,
	f: Field,
): { junction: string; here: string; there: string; related: string } | null {
	const r = s.relations.find((r) => r.related_collection === f.collection && r.meta?.one_field === f.field);
	if (!r?.meta?.junction_field) return null;
	const other = s.relations.find((o) => o.collection === r.collection && o.field === r.meta?.junction_field);
	if (!other?.related_collection) return null;
	return { junction: r.collection, here: r.field, there: other.field, related: other.related_collection };
}

/** How a field is edited, from its metadata and type. */
export function widgetOf(f: Field): Widget {
	const special = f.meta?.special ?? [];
	const iface = f.meta?.interface ?? '';
	if (special.includes('m2m') || special.includes('files') || iface === 'list-m2m' || iface === 'files') return 'm2m';
	if (special.includes('o2m') || iface === 'list-o2m') return 'o2m';
	if (iface === 'recording-timeline') return 'timeline';
	if (iface === 'file' || iface === 'file-image' || special.includes('file')) return 'file';
	if (special.includes('m2o') || iface === 'select-dropdown-m2o' || special.includes('user-created') || special.includes('user-updated'))
		return 'reference';
	if (f.meta?.options?.choices?.length) return 'select';
	switch (f.type) {
		case 'boolean':
			return 'toggle';
		case 'integer':
		case 'bigInteger':
		case 'float':
		case 'decimal':
			return 'number';
		case 'timestamp':
		case 'dateTime':
			return 'datetime';
		case 'date':
			return 'date';
		case 'time':
			return 'time';
		case 'json':
		case 'csv':
			return 'json';
		case 'text':
			return 'textarea';
	}
	if (iface === 'input-multiline' || iface === 'input-rich-text-md' || iface === 'input-rich-text-html') return 'textarea';
	return 'text';
}

/** Shown, never written: marked read-only, or filled in by the platform. */
export function isReadonly(f: Field): boolean {
	const special = f.meta?.special ?? [];
	return (
		!!f.meta?.readonly && !['m2m', 'o2m', 'files'].some((s) => special.includes(s))
	) || special.some((s) => ['date-created', 'date-updated', 'user-created', 'user-updated'].includes(s));
}

/** A field's label: its name in words. */
export function labelOf(f: Field | string): string {
	const name = typeof f === 'string' ? f : f.field;
	const words = name.replace(/_id$/, '').replace(/_/g, ' ');
	return words.charAt(0).toUpperCase() + words.slice(1);
}

// A person by their name before their title; anything else by its title.
const NAMES = ['first_name', 'title', 'name', 'artist_name', 'filename_download', 'slug', 'email', 'label'];

/** The fields to read to name an item of `collection`. */
export function nameFields(s: Schema, collection: string): string[] {
	const c = s.collections.find((c) => c.collection === collection);
	const template = c?.meta?.display_template;
	const own = new Set(fieldsOf(s, collection).map((f) => f.field));
	const fromTemplate = template ? [...template.matchAll(/\{\{\s*([\w.]+)\s*\}\}/g)].map((m) => m[1].split('.')[0]) : [];
	const usual = NAMES.filter((n) => own.has(n)).slice(0, 2);
	if (usual.includes('first_name')) usual.push('last_name');
	const names = fromTemplate.length ? fromTemplate : usual;
	return [...new Set([primaryKey(s, collection), ...names.filter((n) => own.has(n))])];
}

/** How an item is named: its collection's display template, or its usual name fields, or its key. */
export function nameOf(s: Schema, collection: string, item: Record<string, unknown> | null | undefined): string {
	if (!item) return '';
	const c = s.collections.find((c) => c.collection === collection);
	const template = c?.meta?.display_template;
	if (template) {
		const text = template.replace(/\{\{\s*([\w.]+)\s*\}\}/g, (_, k: string) => {
			const v = item[k.split('.')[0]];
			return v == null ? '' : String(v);
		});
		if (text.trim()) return text;
	}
	for (const n of NAMES) {
		const v = item[n];
		if (typeof v === 'string' && v) return n === 'first_name' && item.last_name ? `${v} ${item.last_name}` : v;
	}
	return String(item[primaryKey(s, collection)] ?? '');
}
