// What the admin app's pages owe keyboard and screen-reader users, checked
// on each page the browser tests open: every control (input, select,
// textarea, button, link) has an accessible name (a label, aria-label,
// aria-labelledby, its text, title or alt) and can be reached by the
// keyboard (not taken out of the tab order).

/** The controls of the page shown without a name or out of the tab order, described. */
export async function unreachableOrUnlabelled(tab) {
	return tab.evaluate(() => {
		const named = (el) => {
			const text = (s) => (s ?? '').trim().length > 0;
			if (text(el.getAttribute('aria-label')) || text(el.getAttribute('title'))) return true;
			const by = el.getAttribute('aria-labelledby');
			if (by && by.split(/\s+/).some((id) => text(document.getElementById(id)?.textContent))) return true;
			if (el.labels && [...el.labels].some((l) => text(l.textContent))) return true;
			if (['BUTTON', 'A'].includes(el.tagName)) {
				if (text(el.textContent)) return true;
				return [...el.querySelectorAll('img[alt]')].some((img) => text(img.getAttribute('alt')));
			}
			return el.type === 'submit' || el.type === 'button' ? text(el.value) : false;
		};
		const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
		const controls = document.querySelectorAll('input:not([type=hidden]), select, textarea, button, a[href]');
		const found = [];
		for (const el of controls) {
			if (!shown(el)) continue;
			const what = `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${el.className ? '.' + String(el.className).split(/\s+/)[0] : ''}`;
			if (!named(el)) found.push(`${what}: no accessible name`);
			if (el.tabIndex < 0 && !el.disabled) found.push(`${what}: out of the tab order`);
		}
		return found;
	});
}
