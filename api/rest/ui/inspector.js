// The inspector page: reads a session's decision log and spills through the
// /v1 routes and draws them. Everything a session holds (keys, spilled
// texts) is attacker-controlled, so it is only ever inserted as text nodes:
// no innerHTML, no string-built markup, no eval.
'use strict';

(function () {
    const DECISIONS = ['preserved', 'summarized', 'externalized', 'dropped'];
    const PAGE = 1000; // the most entries /events returns at once
    // Who read a spill back (the log's "via"): the per-session REST route
    // the reacquire tool definition is for, an MCP reacquire call, or the
    // proxy answering the model's call itself.
    const VIA = {
        tool: { short: 'via REST', long: 'through REST (POST /v1/sessions/{session}/reacquire, the reacquire tool of an orchestrator)' },
        mcp: { short: 'via MCP', long: 'through the MCP reacquire tool' },
        proxy: { short: 'via the proxy', long: 'through the proxy, which answered the model\'s reacquire call itself in a round of its own' },
        other: { short: 'via another front', long: 'through a front this page does not know' },
    };
    const viaOf = e => (e.via in VIA ? e.via : 'other');

    const state = {
        key: '',         // the API key, in this closure only
        session: '',
        events: [],
        selected: -1,
        loading: 0,      // a generation number: a newer load discards older answers
    };

    const $ = id => document.getElementById(id);
    // One formatter: toLocaleString() builds a new one per call, which a
    // timeline of thousands of entries feels.
    const numbers = new Intl.NumberFormat('en-US');
    const fmt = n => numbers.format(Number(n));

    // el('td', {class: 'x', 'data-figure': 'budget'}, 'text', child...):
    // strings become text nodes, whatever they hold.
    function el(tag, attrs, ...children) {
        const e = document.createElement(tag);
        for (const [k, v] of Object.entries(attrs || {}))
            if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
        for (const c of children) {
            if (c === undefined || c === null || c === false) continue;
            e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
        }
        return e;
    }

    function clear(e) {
        while (e.firstChild) e.removeChild(e.firstChild);
        return e;
    }

    function setStatus(text, isError) {
        const s = $('status');
        s.textContent = text || '';
        s.classList.toggle('error', Boolean(isError));
    }

    // ---- The API ----

    class ApiError extends Error {
        constructor(status, message) {
            super(message);
            this.status = status;
        }
    }

    async function api(path) {
        const headers = { Accept: 'application/json' };
        if (state.key) headers.Authorization = 'Bearer ' + state.key;
        const r = await fetch(path, { headers, credentials: 'omit', cache: 'no-store' });
        let body = null;
        try {
            body = await r.json();
        } catch (e) {
            throw new ApiError(r.status, 'the server answered ' + r.status + ' without a JSON body');
        }
        if (!r.ok) {
            const msg = body && body.error && body.error.message ? body.error.message : 'HTTP ' + r.status;
            throw new ApiError(r.status, msg);
        }
        return body;
    }

    const sessionPath = s => '/v1/sessions/' + encodeURIComponent(s);

    async function readLog(session, gen) {
        const all = [];
        let after = null;
        for (;;) {
            const q = '?limit=' + PAGE + (after ? '&after=' + encodeURIComponent(after) : '');
            const page = await api(sessionPath(session) + '/events' + q);
            if (gen !== state.loading) return null;
            all.push(...page.events);
            if (!page.next_after) return all;
            after = page.next_after;
            setStatus('Loading… ' + fmt(all.length) + ' entries');
        }
    }

    // ---- Routing: #/sessions/<id>[/events/<event id>] ----

    function parseHash() {
        const m = /^#\/sessions\/([^/]+)(?:\/events\/([^/]+))?$/.exec(location.hash);
        if (!m) return null;
        try {
            return { session: decodeURIComponent(m[1]), event: m[2] ? decodeURIComponent(m[2]) : null };
        } catch (e) {
            return null;
        }
    }

    function writeHash() {
        const ev = state.events[state.selected];
        const h = '#/sessions/' + encodeURIComponent(state.session) +
            (ev ? '/events/' + encodeURIComponent(ev.id) : '');
        if (location.hash !== h) history.replaceState(null, '', h);
    }

    // ---- Loading ----

    function showKeyPanel(message) {
        $('key-panel').hidden = false;
        const err = $('key-error');
        err.hidden = !message;
        err.textContent = message || '';
        $('key-input').focus();
    }

    async function load(session, wantEvent) {
        const gen = ++state.loading;
        state.session = session;
        $('session-input').value = session;
        $('session-view').hidden = true;
        closeSpill();
        setStatus('Loading ' + session + '…');
        let events;
        try {
            events = await readLog(session, gen);
        } catch (e) {
            if (gen !== state.loading) return;
            if (e.status === 401) {
                setStatus('');
                // A key was tried: show what the server said of it.
                showKeyPanel(state.key ? e.message : '');
                return;
            }
            setStatus(e.message, true);
            return;
        }
        if (events === null) return;
        $('key-panel').hidden = true;
        state.events = events;
        if (!events.length) {
            setStatus('No decisions are logged for session ' + session + ' yet.');
            return;
        }
        setStatus('');
        $('session-view').hidden = false;
        let idx = events.findIndex(e => e.id === wantEvent);
        if (idx < 0) {
            idx = lastIndex(events, e => e.kind === 'compact');
            if (idx < 0) idx = events.length - 1;
        }
        renderTimeline();
        select(idx);
        // For whoever measures the page (bench/ui): the session is drawn.
        performance.mark('inspector-drawn');
    }

    function lastIndex(arr, pred) {
        for (let i = arr.length - 1; i >= 0; i--) if (pred(arr[i])) return i;
        return -1;
    }

    // ---- Timeline ----

    function tickTitle(e) {
        const t = e.time + ' · ';
        if (e.kind === 'compact')
            return t + (e.outcome === 'failure'
                ? 'refused: ' + e.failed_key + ' needs a budget of ' + fmt(e.required_budget)
                : 'compaction: ' + fmt(e.used_tokens) + ' of ' + fmt(e.budget) + ' tokens');
        if (e.kind === 'verify') return t + 'verify: ' + e.outcome.replace('_', ' ');
        if (e.kind === 'reacquire') return t + 're-acquired ' + e.key + ' ' + VIA[viaOf(e)].short;
        return t + e.kind;
    }

    // One button per entry and nothing inside it: a log of thousands of
    // entries costs as little layout as it can; one listener serves them all.
    function renderTimeline() {
        const tl = clear($('timeline'));
        const n = { compact: 0, failure: 0, verify: 0, reacquire: 0 };
        const frag = document.createDocumentFragment();
        state.events.forEach((e, i) => {
            let cls = 'tick tick-' + e.kind;
            const b = el('button', { type: 'button', role: 'option', 'data-index': i, title: tickTitle(e) });
            if (e.kind === 'compact') {
                if (e.outcome === 'failure') {
                    cls = 'tick tick-failure';
                    n.failure++;
                } else {
                    cls = 'tick tick-ok';
                    const h = e.budget > 0 ? Math.max(6, Math.round(100 * e.used_tokens / e.budget)) : 6;
                    b.style.setProperty('--used', h + '%');
                }
                n.compact++;
            } else if (e.kind in n) {
                n[e.kind]++;
            }
            if (e.kind === 'reacquire') {
                cls += ' via-' + viaOf(e);
                b.dataset.via = viaOf(e);
            }
            b.className = cls;
            frag.appendChild(b);
        });
        tl.appendChild(frag);
        $('timeline-summary').textContent = '· ' + fmt(n.compact) + (n.compact === 1 ? ' compaction' : ' compactions') +
            (n.failure ? ', ' + fmt(n.failure) + ' refused' : '') +
            (n.verify ? ', ' + fmt(n.verify) + (n.verify === 1 ? ' verify' : ' verifies') : '') +
            (n.reacquire ? ', ' + fmt(n.reacquire) + (n.reacquire === 1 ? ' re-acquisition' : ' re-acquisitions') : '');
    }

    function select(i) {
        if (i < 0 || i >= state.events.length) return;
        const tl = $('timeline');
        const old = tl.children[state.selected];
        if (old) {
            old.classList.remove('selected');
            old.setAttribute('aria-selected', 'false');
        }
        state.selected = i;
        const cur = tl.children[i];
        cur.classList.add('selected');
        cur.setAttribute('aria-selected', 'true');
        cur.scrollIntoView({ block: 'nearest', inline: 'nearest' });
        $('position').textContent = 'entry ' + fmt(i + 1) + ' of ' + fmt(state.events.length);
        $('prev').disabled = i === 0;
        $('next').disabled = i === state.events.length - 1;
        closeSpill();
        renderDetail(state.events[i], i);
        writeHash();
    }

    // ---- One entry ----

    // The units of a compaction entry in request order. Entries written
    // before the log carried "units" have only the per-decision lists.
    function unitsOf(e) {
        if (Array.isArray(e.units)) return e.units;
        const out = [];
        for (const k of e.preserved || []) out.push({ key: k, decision: 'preserved' });
        for (const k of e.summarized || []) out.push({ key: k, decision: 'summarized' });
        for (const x of e.externalized || []) out.push({ key: x.key, class: x.class, decision: 'externalized', sha256: x.sha256 });
        for (const x of e.dropped || []) out.push({ key: x.key, decision: 'dropped', reason: x.reason });
        return out;
    }

    function previousCompaction(i) {
        for (let j = i - 1; j >= 0; j--) {
            const e = state.events[j];
            if (e.kind === 'compact' && e.outcome === 'ok') return { entry: e, index: j };
        }
        return null;
    }

    function figure(name, label, value, cls, hint) {
        return el('div', { class: 'figure ' + (cls || ''), title: hint },
            el('div', { class: 'figure-label' }, label),
            el('div', { class: 'figure-value', 'data-figure': name, 'data-value': value }, fmt(value)));
    }

    function decisionBadge(d) {
        return el('span', { class: 'badge badge-' + (d || 'none') }, d || '—');
    }

    function renderDetail(e, i) {
        const d = clear($('detail'));
        if (e.kind === 'compact') renderCompaction(d, e, i);
        else if (e.kind === 'verify') renderVerify(d, e);
        else if (e.kind === 'reacquire') renderReacquire(d, e);
        else d.appendChild(el('p', {}, 'An entry of kind ' + e.kind + '.'));
    }

    function entryHead(title, e, badge) {
        return el('div', { class: 'section-head' },
            el('h2', {}, title, ' ', el('span', { class: 'muted' }, e.time)),
            badge);
    }

    function segmentsOf(e, units) {
        const by = { preserved: 0, summarized: 0, externalized: 0 };
        let known = true;
        for (const u of units) {
            if (u.tokens_after === undefined) known = false;
            else if (u.decision in by) by[u.decision] += u.tokens_after;
        }
        if (!known) return null;
        const seg = [
            { name: 'verbatim', label: 'Verbatim', tokens: by.preserved + (e.system_tokens || 0) },
            { name: 'summaries', label: 'Summaries', tokens: by.summarized },
            { name: 'pointers', label: 'Pointers', tokens: by.externalized },
            { name: 'markers', label: 'Loss markers', tokens: e.marker_tokens || 0 },
        ];
        seg.push({ name: 'free', label: 'Free room', tokens: Math.max(0, e.budget - e.used_tokens) });
        return seg;
    }

    function budgetBar(e, seg) {
        const bar = el('div', { class: 'bar', role: 'img',
            'aria-label': seg.map(s => s.label + ' ' + fmt(s.tokens)).join(', ') });
        const total = Math.max(e.budget, 1);
        for (const s of seg) {
            if (!s.tokens) continue;
            const share = s.tokens / total;
            // Named inside the bar where there is room for it.
            const part = el('div', { class: 'bar-seg seg-' + s.name, 'data-segment': s.name,
                title: s.label + ': ' + fmt(s.tokens) + ' tokens' },
                share >= 0.12 ? el('span', {}, s.label + ' · ' + fmt(s.tokens)) : null);
            part.style.flexGrow = String(share);
            bar.appendChild(part);
        }
        const legend = el('ul', { class: 'legend bar-legend' });
        for (const s of seg)
            legend.appendChild(el('li', {},
                el('span', { class: 'swatch seg-' + s.name }),
                s.label + ' ',
                el('strong', { 'data-tokens': s.name, 'data-value': s.tokens }, fmt(s.tokens)),
                el('span', { class: 'muted' }, ' (' + Math.round(100 * s.tokens / total) + '%)')));
        return [bar, legend];
    }

    function renderCompaction(d, e, i) {
        const failed = e.outcome === 'failure';
        const units = unitsOf(e);
        const fmtName = e.format && e.format !== 'units' ? e.format + ' chat history' : 'units';
        d.appendChild(entryHead('Compaction', e,
            el('span', { class: 'badge ' + (failed ? 'badge-failure' : 'badge-ok'), 'data-outcome': e.outcome },
                failed ? 'refused' : 'ok')));
        d.appendChild(el('p', { class: 'muted' }, fmtName + ' · ' + fmt(units.length) + ' ' +
            (e.format && e.format !== 'units' ? 'messages' : 'units')));

        const counts = {};
        for (const k of DECISIONS) counts[k] = units.filter(u => u.decision === k).length;
        // A refusal used nothing: what it asked for is the figure to see.
        const asked = units.reduce((a, u) => a + (u.tokens_before || 0), 0);
        const figs = el('div', { class: 'figures' },
            figure('budget', 'Budget', e.budget),
            failed ? figure('asked', 'Tokens asked', asked) : figure('used', 'Used', e.used_tokens),
            failed ? null : figure('free', 'Free', Math.max(0, e.budget - e.used_tokens)),
            figure('required', 'Required budget', e.required_budget, failed ? 'bad' : '',
                'the least budget at which this request keeps every protected unit'));
        if (!failed)
            for (const k of DECISIONS) figs.appendChild(figure('count-' + k, k[0].toUpperCase() + k.slice(1), counts[k], 'count count-' + k));
        d.appendChild(figs);

        if (failed) {
            d.appendChild(unitList.failureBox(e));
        } else {
            const seg = segmentsOf(e, units);
            if (seg) for (const part of budgetBar(e, seg)) d.appendChild(part);
        }

        if (!failed) d.appendChild(renderChanges(e, units, i));
        d.appendChild(unitTable(e, units, failed));
    }

    // Which units changed fate since the session's previous compaction
    // that planned something, and which came or went.
    function changesSince(units, prevEntry) {
        const before = new Map(unitsOf(prevEntry).map(u => [u.key, u.decision]));
        const now = new Set(units.map(u => u.key));
        const out = { changed: [], added: [], gone: [] };
        for (const u of units) {
            if (!before.has(u.key)) out.added.push(u.key);
            else if (before.get(u.key) !== u.decision) out.changed.push({ key: u.key, from: before.get(u.key), to: u.decision });
        }
        for (const k of before.keys()) if (!now.has(k)) out.gone.push(k);
        return out;
    }

    function keyList(label, keys, attr) {
        const p = el('p', { class: 'key-list', [attr]: keys.length }, el('span', { class: 'muted' }, label + ' '));
        keys.forEach((k, n) => {
            if (n) p.appendChild(document.createTextNode(', '));
            p.appendChild(el('code', {}, k));
        });
        return p;
    }

    function renderChanges(e, units, i) {
        const box = el('div', { class: 'changes' });
        const prev = previousCompaction(i);
        if (!prev) {
            box.appendChild(el('h3', {}, 'Since the previous compaction'));
            box.appendChild(el('p', { class: 'muted', 'data-changes': 0 }, 'This is the session’s first compaction.'));
            return box;
        }
        const c = changesSince(units, prev.entry);
        const head = el('h3', {}, 'Since the previous compaction (');
        box.title = 'units that changed fate are marked at the left of the table';
        const link = el('button', { type: 'button', class: 'link' }, 'entry ' + fmt(prev.index + 1));
        link.addEventListener('click', () => select(prev.index));
        head.appendChild(link);
        head.appendChild(document.createTextNode(')'));
        box.appendChild(head);
        if (!c.changed.length)
            box.appendChild(el('p', { class: 'muted', 'data-changes': 0 }, 'No unit changed fate.'));
        else {
            const list = el('ul', { class: 'change-list', 'data-changes': c.changed.length });
            for (const x of c.changed)
                list.appendChild(el('li', { 'data-change-key': x.key },
                    el('code', {}, x.key), ' ', decisionBadge(x.from), ' → ', decisionBadge(x.to)));
            box.appendChild(list);
        }
        if (c.added.length) box.appendChild(keyList('New:', c.added, 'data-added'));
        if (c.gone.length) box.appendChild(keyList('No longer sent:', c.gone, 'data-gone'));
        return box;
    }

    function unitTable(e, units, failed) {
        const prev = failed ? null : previousCompaction(state.selected);
        const changedKeys = new Set(prev ? changesSince(units, prev.entry).changed.map(x => x.key) : []);
        return unitList.unitTable(e, units, failed, changedKeys);
    }

    function renderVerify(d, e) {
        const bad = e.outcome !== 'repaired';
        d.appendChild(entryHead('Verify', e,
            el('span', { class: 'badge ' + (e.outcome === 'failure' ? 'badge-failure' : bad ? 'badge-warn' : 'badge-ok') },
                e.outcome.replace('_', ' '))));
        d.appendChild(el('p', {}, 'A verify found ' + fmt(e.missing.length) +
            ' protected unit' + (e.missing.length === 1 ? '' : 's') + ' missing from the context.'));
        if (e.budget !== undefined) {
            d.appendChild(el('div', { class: 'figures' },
                figure('budget', 'Budget', e.budget),
                figure('context', 'Context tokens', e.context_tokens),
                figure('required', 'Required budget', e.required_budget, e.outcome === 'failure' ? 'bad' : '')));
        }
        const asOf = new Map(((e.repair && e.repair.append) || []).map(a => [a.key, a.as]));
        const list = el('ul', { class: 'missing-list' });
        for (const m of e.missing)
            list.appendChild(el('li', {}, el('code', {}, m.key),
                asOf.has(m.key) ? ' — restored as ' + asOf.get(m.key) : ''));
        d.appendChild(list);
        if (e.failed_key)
            d.appendChild(el('div', { class: 'failure-box' }, 'The repair could not fit ', el('code', {}, e.failed_key), '.'));
    }

    function renderReacquire(d, e) {
        const via = VIA[viaOf(e)];
        d.appendChild(entryHead('Spill re-acquired', e,
            el('span', { class: 'badge badge-reacquire via-' + viaOf(e), 'data-via': viaOf(e) }, via.short)));
        d.appendChild(el('p', { 'data-via-text': '' }, 'An agent read back ', el('code', {}, e.key), ' (' + fmt(e.tokens) +
            ' tokens) ' + via.long + '.'));
        const b = el('button', { type: 'button', class: 'open-spill', 'data-key': e.key }, 'Open spill');
        b.addEventListener('click', () => openSpill(e.key, e.sha256, b));
        d.appendChild(b);
    }

    // ---- Spills ----

    function readSpill(key, sha256) {
        return api(sessionPath(state.session) + '/spills/' + encodeURIComponent(key) +
            '?sha256=' + encodeURIComponent(sha256));
    }

    // The spill opens in a dialog over the list, where the user is; Escape
    // or Close shuts it and gives the focus back to the button.
    let spillOpener = null;
    function closeSpill() {
        const dlg = $('spill-panel');
        if (dlg.open) dlg.close();
    }

    async function openSpill(key, sha256, opener) {
        const dlg = $('spill-panel');
        spillOpener = opener || null;
        $('spill-key').textContent = key;
        $('spill-sha256').textContent = sha256;
        $('spill-created').textContent = '…';
        $('spill-tokens').textContent = '…';
        $('spill-class').textContent = '…';
        $('spill-text').textContent = '';
        $('spill-error').hidden = true;
        if (!dlg.open) dlg.showModal();
        const gen = state.loading;
        try {
            const s = await readSpill(key, sha256);
            if (gen !== state.loading) return;
            $('spill-sha256').textContent = s.sha256;
            $('spill-created').textContent = s.created_at;
            $('spill-tokens').textContent = fmt(s.tokens);
            $('spill-class').textContent = s.class;
            $('spill-text').textContent = s.text;
        } catch (err) {
            $('spill-error').hidden = false;
            $('spill-error').textContent = err.message;
            $('spill-created').textContent = $('spill-tokens').textContent = $('spill-class').textContent = '—';
        }
    }

    const unitList = window.compactdUnits({ el, fmt, decisionBadge, readSpill, openSpill });

    // ---- Wiring ----

    function fromHash() {
        const h = parseHash();
        if (!h) {
            if (!state.session) setStatus('Enter a session id to see its compactions.');
            return;
        }
        const ev = state.events[state.selected];
        if (h.session === state.session && ev && h.event === ev.id) return; // our own replaceState
        load(h.session, h.event);
    }

    document.addEventListener('DOMContentLoaded', () => {
        $('session-form').addEventListener('submit', ev => {
            ev.preventDefault();
            const s = $('session-input').value.trim();
            if (!s) return;
            const h = '#/sessions/' + encodeURIComponent(s);
            if (location.hash === h) load(s, null);
            else location.hash = h;
        });
        $('key-form').addEventListener('submit', ev => {
            ev.preventDefault();
            state.key = $('key-input').value.trim();
            $('key-input').value = '';
            if (state.session) load(state.session, parseHash() && parseHash().event);
        });
        $('timeline').addEventListener('click', ev => {
            const b = ev.target.closest('.tick');
            if (b) select(Number(b.dataset.index));
        });
        $('prev').addEventListener('click', () => select(state.selected - 1));
        $('next').addEventListener('click', () => select(state.selected + 1));
        $('spill-close').addEventListener('click', closeSpill);
        $('spill-panel').addEventListener('close', () => {
            if (spillOpener && spillOpener.isConnected) spillOpener.focus();
            spillOpener = null;
        });
        document.addEventListener('keydown', ev => {
            if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement ||
                $('session-view').hidden || $('spill-panel').open) return;
            if (ev.key === '/') {
                ev.preventDefault();
                unitList.focusFilter();
            } else if (ev.key === 'ArrowLeft') select(state.selected - 1);
            else if (ev.key === 'ArrowRight') select(state.selected + 1);
        });
        window.addEventListener('hashchange', fromHash);
        fromHash();
    });
})();
