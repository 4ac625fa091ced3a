// The host's counters, from /server/metrics: Prometheus' text format, or
// the JSON object `{data: {name: number}}` the host answers today.

export type Sample = { name: string; value: number; counter: boolean };

/** Prometheus text exposition: `name{labels} value [timestamp]`, `# TYPE name kind`. */
export function parsePrometheus(text: string): Sample[] {
	const kinds = new Map<string, string>();
	const out: Sample[] = [];
	for (const raw of text.split('\n')) {
		const line = raw.trim();
		if (!line) continue;
		if (line.startsWith('#')) {
			const m = /^#\s*TYPE\s+(\S+)\s+(\S+)/.exec(line);
			if (m) kinds.set(m[1], m[2]);
			continue;
		}
		const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
		if (!m) continue;
		const value = Number(m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : m[3]);
		if (!Number.isFinite(value)) continue;
		const base = m[1].replace(/_(total|count|sum|bucket)$/, '');
		const kind = kinds.get(m[1]) ?? kinds.get(base);
		out.push({ name: m[1] + (m[2] ?? ''), value, counter: kind === 'counter' || m[1].endsWith('_total') });
	}
	return out;
}

/** The JSON form: every number of `data` (nested objects named a.b); each a count since start. */
export function parseJsonMetrics(body: unknown): Sample[] {
	const out: Sample[] = [];
	const walk = (value: unknown, prefix: string) => {
		if (typeof value === 'number' && Number.isFinite(value)) out.push({ name: prefix, value, counter: true });
		else if (value && typeof value === 'object' && !Array.isArray(value)) {
			for (const [k, v] of Object.entries(value)) walk(v, prefix ? `${prefix}.${k}` : k);
		}
	};
	const data = body && typeof body === 'object' && 'data' in body ? (body as { data: unknown }).data : body;
	walk(data, '');
	return out;
}

export function parseMetrics(contentType: string | null, text: string): Sample[] {
	if (contentType?.includes('json') || /^\s*[{[]/.test(text)) {
		try {
			return parseJsonMetrics(JSON.parse(text));
		} catch {
			return [];
		}
	}
	return parsePrometheus(text);
}

/** A metric's series over time: what the chart draws (a counter as its rate per second). */
export type Series = { name: string; counter: boolean; times: number[]; values: number[]; plotted: (number | null)[]; last: number };

export function addSample(series: Map<string, Series>, samples: Sample[], at: number, keep: number) {
	for (const s of samples) {
		let entry = series.get(s.name);
		if (!entry) {
			entry = { name: s.name, counter: s.counter, times: [], values: [], plotted: [], last: s.value };
			series.set(s.name, entry);
		}
		const prevT = entry.times.at(-1);
		const prevV = entry.values.at(-1);
		let y: number | null = s.value;
		if (s.counter) {
			// No rate before a second sample, nor across a reset (the counter went down: a restart).
			y = prevT !== undefined && prevV !== undefined && s.value >= prevV && at > prevT ? (s.value - prevV) / (at - prevT) : null;
		}
		entry.times.push(at);
		entry.values.push(s.value);
		entry.plotted.push(y);
		entry.last = s.value;
		if (entry.times.length > keep) {
			entry.times.shift();
			entry.values.shift();
			entry.plotted.shift();
		}
	}
}
