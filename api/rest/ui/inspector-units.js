// The inspector's unit list: a filter over it (key, class, decision), each
// message's role and first words, a dropped unit's re-run hint, and the
// refusal banner. Loaded before inspector.js, which hands it its helpers.
// Everything is inserted as text nodes: no innerHTML, no eval.
'use strict';

window.compactdUnits = function (h) {
    const { el, fmt, decisionBadge, readSpill, openSpill } = h;
    const filter = { text: '', cls: '', decision: '' }; // kept from entry to entry
    const words = new Map(); // key + sha256 -> first words of that spill

    // The first words of a spilled message: its JSON's texts (content,
    // parts, tool calls), whatever the format.
    function firstWords(text) {
        let v;
        try {
            v = JSON.parse(text);
        } catch (e) {
            v = text;
        }
        const out = [];
        (function walk(x, name) {
            if (out.join(' ').length > 120) return;
            if (typeof x === 'string') {
                if (!['role', 'type', 'id', 'tool_call_id', 'tool_use_id', 'call_id', 'signature'].includes(name)) out.push(x);
            } else if (Array.isArray(x)) x.forEach(y => walk(y, name));
            else if (x && typeof x === 'object') for (const [k, y] of Object.entries(x)) walk(y, k);
        })(v, '');
        const s = out.join(' ').replace(/\s+/g, ' ').trim();
        return s.length > 80 ? s.slice(0, 80) + '…' : s;
    }

    // Spill reads for the previews, a few at a time.
    const queue = [];
    let running = 0;
    function pump() {
        while (running < 4 && queue.length) {
            const job = queue.shift();
            if (!job.cell.isConnected) continue;
            running++;
            readSpill(job.key, job.sha256).then(s => {
                words.set(job.key + '\n' + job.sha256, firstWords(s.text));
                job.cell.textContent = words.get(job.key + '\n' + job.sha256);
            }, err => {
                job.cell.textContent = '(spill not readable: ' + err.message + ')';
            }).finally(() => {
                running--;
                pump();
            });
        }
    }

    function previewCell(u) {
        const cell = el('span', { class: 'first-words', 'data-first-words': '' });
        if (u.decision === 'externalized' && u.sha256) {
            const k = u.key + '\n' + u.sha256;
            if (words.has(k)) cell.textContent = words.get(k);
            else {
                cell.textContent = '…';
                queue.push({ key: u.key, sha256: u.sha256, cell });
            }
        } else {
            cell.classList.add('muted');
            cell.title = 'the decision log keeps no text of a message; only a spilled one can be read';
            cell.textContent = 'text not stored';
        }
        return cell;
    }

    function matches(u) {
        const q = filter.text.toLowerCase();
        return (!q || u.key.toLowerCase().includes(q) || (u.role || '').includes(q)) &&
            (!filter.cls || u.class === filter.cls) &&
            (!filter.decision || (u.decision || '') === filter.decision);
    }

    function applyFilter(rows, units, count, empty) {
        let n = 0;
        rows.forEach((r, i) => {
            r.hidden = !matches(units[i]);
            if (!r.hidden) n++;
        });
        count.textContent = fmt(n) + ' of ' + fmt(units.length) + ' shown';
        count.dataset.shown = n;
        empty.hidden = n > 0;
    }

    function select(id, label, value, options) {
        const s = el('select', { id });
        for (const [v, t] of options) s.appendChild(el('option', { value: v }, t));
        s.value = value;
        return [el('label', { for: id }, label), s];
    }

    function filterBar(onChange) {
        const input = el('input', { id: 'unit-filter-key', type: 'search', placeholder: 'key contains… (/)',
            autocomplete: 'off', spellcheck: 'false', 'aria-controls': 'units' });
        input.value = filter.text;
        const [cl, cs] = select('unit-filter-class', 'Class', filter.cls,
            [['', 'any'], ['protected', 'protected'], ['derivable', 'derivable'], ['redundant', 'redundant']]);
        const [dl, ds] = select('unit-filter-decision', 'Decision', filter.decision,
            [['', 'any'], ['preserved', 'preserved'], ['summarized', 'summarized'],
                ['externalized', 'externalized'], ['dropped', 'dropped']]);
        const count = el('span', { id: 'unit-filter-count', class: 'muted', role: 'status' });
        input.addEventListener('input', () => { filter.text = input.value.trim(); onChange(); });
        input.addEventListener('keydown', ev => {
            if (ev.key === 'Escape' && input.value) {
                input.value = filter.text = '';
                onChange();
                ev.preventDefault();
            }
        });
        cs.addEventListener('change', () => { filter.cls = cs.value; onChange(); });
        ds.addEventListener('change', () => { filter.decision = ds.value; onChange(); });
        const bar = el('div', { class: 'unit-filter', role: 'search', 'aria-label': 'Filter the units' },
            el('label', { for: 'unit-filter-key' }, 'Filter'), input, cl, cs, dl, ds, count);
        return { bar, count };
    }

    function whyCell(e, u, failed) {
        const why = el('td', { class: 'why' });
        if (u.decision === 'externalized' && u.sha256) {
            const b = el('button', { type: 'button', class: 'open-spill', 'data-key': u.key }, 'Open spill');
            b.addEventListener('click', () => openSpill(u.key, u.sha256, b));
            why.appendChild(b);
            why.appendChild(el('code', { class: 'muted digest' }, ' sha256:' + u.sha256.slice(0, 16)));
        } else if (u.decision === 'dropped') {
            why.appendChild(document.createTextNode((u.reason || '').replace(/_/g, ' ')));
            if (u.reacquire)
                why.appendChild(el('span', { class: 'hint', 'data-hint': '' }, ' · to get it back: ',
                    el('code', {}, u.reacquire)));
        } else if (failed && u.key === e.failed_key) {
            why.appendChild(el('strong', { class: 'bad' }, 'named by the refusal'));
        }
        return why;
    }

    function unitTable(e, units, failed, changedKeys) {
        const chat = e.format && e.format !== 'units';
        const head = el('tr', {}, el('th', { class: 'num' }, chat ? 'Message' : '#'), el('th', {}, 'Key'));
        if (chat) head.appendChild(el('th', {}, 'Role · first words'));
        for (const t of ['Class', 'Decision']) head.appendChild(el('th', {}, t));
        head.appendChild(el('th', { class: 'num' }, 'Tokens before'));
        head.appendChild(el('th', { class: 'num' }, 'after'));
        head.appendChild(el('th', {}, 'Why / where'));
        const table = el('table', { class: 'units', id: 'units' }, el('thead', {}, head));
        const body = el('tbody');
        const rows = units.map((u, n) => {
            const row = el('tr', {
                class: 'unit decision-' + (u.decision || 'none') + (changedKeys.has(u.key) ? ' changed' : ''),
                'data-key': u.key, 'data-decision': u.decision || '', 'data-role': u.role,
                title: changedKeys.has(u.key) ? 'changed fate since the previous compaction' : null,
            },
            el('td', { class: 'num' }, u.message !== undefined ? u.message : n),
            el('td', { class: 'key' }, el('code', {}, u.key)));
            if (chat)
                row.appendChild(el('td', { class: 'message' },
                    el('span', { class: 'role', 'data-role-text': '' }, u.role || '—'), ' ', previewCell(u)));
            row.appendChild(el('td', {}, u.class || '—'));
            row.appendChild(el('td', {}, decisionBadge(u.decision)));
            row.appendChild(el('td', { class: 'num', 'data-col': 'before' }, u.tokens_before !== undefined ? fmt(u.tokens_before) : '—'));
            row.appendChild(el('td', { class: 'num', 'data-col': 'after' }, u.tokens_after !== undefined ? fmt(u.tokens_after) : '—'));
            row.appendChild(whyCell(e, u, failed));
            body.appendChild(row);
            return row;
        });
        const empty = el('p', { class: 'muted', id: 'unit-filter-empty' }, 'No unit matches the filter.');
        table.appendChild(body);
        const f = filterBar(() => applyFilter(rows, units, f.count, empty));
        applyFilter(rows, units, f.count, empty);
        Promise.resolve().then(pump); // once the table is in the page

        return el('div', {}, f.bar, el('div', { class: 'table-wrap' }, table), empty);
    }

    // The refusal as its 422 put it: the unit named, its tokens and its
    // pointer's, and whether that pointer alone would have fit.
    function failureBox(e) {
        const box = el('div', { class: 'failure-box', role: 'alert' }, el('strong', {}, 'Refused. '));
        const add = (...parts) => parts.forEach(p => box.appendChild(typeof p === 'string' ? document.createTextNode(p) : p));
        const named = el('code', { 'data-failed-key': '' }, e.failed_key);
        const need = 'this request needs a budget of ' + fmt(e.required_budget) + ' tokens and had ' + fmt(e.budget) + '. ';
        const chat = e.format && e.format !== 'units';
        if (e.failed_tokens === undefined) {
            add('The protected units do not fit in their cheapest forms: ', need, 'The refusal named ', named, '. ');
        } else if (chat) {
            add('The protected messages do not fit in their cheapest form with the markers they need: ', need);
            if (e.failed_cause)
                add('Most of it is ', el('strong', { 'data-failed-cause': '' }, e.failed_cause),
                    ' (' + fmt(e.failed_cause_tokens) + ' tokens). ');
            add('Its largest protected message is #' + e.failed_index + ' ', named,
                ' (' + fmt(e.failed_tokens) + ' tokens). ');
        } else if (Math.min(e.failed_tokens, e.failed_pointer_tokens) > e.budget) {
            add('The protected unit ', named, ' (' + fmt(e.failed_tokens) + ' tokens) cannot fit even as a ' +
                fmt(e.failed_pointer_tokens) + '-token pointer: ', need);
        } else {
            add('The protected units, each in its cheapest form, passed the budget at ', named,
                ' (' + fmt(e.failed_tokens) + ' tokens; its ' + fmt(e.failed_pointer_tokens) +
                '-token pointer alone would fit): ', need);
        }
        add('Nothing was dropped or written.');
        return box;
    }

    return { unitTable, failureBox, focusFilter: () => { const f = document.getElementById('unit-filter-key'); if (f) f.focus(); } };
};
