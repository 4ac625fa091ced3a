// The OpenAPI document as text: operations grouped by tag (or, untagged,
// by the path's first segment), schemas summarised in a TypeScript-like line.

type Json = Record<string, unknown>;
export type Parameter = { name: string; in: string; required: boolean; type: string; description: string };
export type Response = { code: string; description: string; content: { type: string; schema: string }[] };
export type Operation = {
	key: string;
	method: string;
	path: string;
	summary: string;
	description: string;
	parameters: Parameter[];
	body: { type: string; schema: string }[];
	bodyRequired: boolean;
	responses: Response[];
};
export type Group = { name: string; operations: Operation[] };

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options', 'trace'];

const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** A schema in one line: `{ id: string, tags?: string[] }`, `ItemsVideos[]`, `string | null`. */
export function schemaText(schema: unknown, depth = 0): string {
	if (schema === true) return 'any';
	if (schema === false) return 'never';
	const s = obj(schema);
	if (typeof s.$ref === 'string') return s.$ref.split('/').pop() ?? s.$ref;
	for (const k of ['oneOf', 'anyOf'] as const) {
		if (Array.isArray(s[k])) return (s[k] as unknown[]).map((x) => schemaText(x, depth)).join(' | ');
	}
	if (Array.isArray(s.allOf)) return (s.allOf as unknown[]).map((x) => schemaText(x, depth)).join(' & ');
	if (Array.isArray(s.enum)) return (s.enum as unknown[]).map((v) => JSON.stringify(v)).join(' | ');
	const types = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === 'string' ? [s.type] : [];
	const one = (t: string): string => {
		if (t === 'array') {
			const inner = schemaText(s.items ?? true, depth);
			return /[ |&]/.test(inner) ? `(${inner})[]` : `${inner}[]`;
		}
		if (t === 'object' || (t === '' && s.properties)) {
			const props = obj(s.properties);
			const names = Object.keys(props);
			if (names.length === 0) return 'object';
			if (depth >= 2) return '{ … }';
			const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
			return `{ ${names.map((n) => `${n}${required.has(n) ? '' : '?'}: ${schemaText(props[n], depth + 1)}`).join(', ')} }`;
		}
		if (t === 'integer' || t === 'number' || t === 'string') return s.format ? `${t}(${String(s.format)})` : t;
		return t;
	};
	if (types.length === 0) return s.properties ? one('') : 'any';
	return types.map(one).join(' | ');
}

function contentOf(content: unknown): { type: string; schema: string }[] {
	return Object.entries(obj(content)).map(([type, c]) => ({ type, schema: schemaText(obj(c).schema ?? true) }));
}

export function operations(doc: unknown): Group[] {
	const groups = new Map<string, Operation[]>();
	const paths = obj(obj(doc).paths);
	for (const [path, itemRaw] of Object.entries(paths)) {
		const item = obj(itemRaw);
		const shared = Array.isArray(item.parameters) ? (item.parameters as unknown[]) : [];
		for (const method of METHODS) {
			if (!(method in item)) continue;
			const op = obj(item[method]);
			const params = [...shared, ...(Array.isArray(op.parameters) ? (op.parameters as unknown[]) : [])].map((p) => {
				const o = obj(p);
				return {
					name: str(o.name) || (typeof o.$ref === 'string' ? o.$ref.split('/').pop()! : '?'),
					in: str(o.in),
					required: o.required === true,
					type: schemaText(o.schema ?? true),
					description: str(o.description),
				};
			});
			const body = obj(op.requestBody);
			const responses = Object.entries(obj(op.responses)).map(([code, r]) => ({
				code,
				description: str(obj(r).description),
				content: contentOf(obj(r).content),
			}));
			const tags = Array.isArray(op.tags) ? (op.tags as string[]) : [];
			const group = tags[0] ?? `/${path.split('/').filter(Boolean)[0] ?? ''}`;
			const list = groups.get(group) ?? [];
			list.push({
				key: `${method} ${path}`,
				method: method.toUpperCase(),
				path,
				summary: str(op.summary),
				description: str(op.description),
				parameters: params,
				body: contentOf(body.content),
				bodyRequired: body.required === true,
				responses,
			});
			groups.set(group, list);
		}
	}
	return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, ops]) => ({ name, operations: ops }));
}

export function schemas(doc: unknown): { name: string; text: string }[] {
	return Object.entries(obj(obj(obj(doc).components).schemas)).map(([name, s]) => ({ name, text: schemaText(s) }));
}
