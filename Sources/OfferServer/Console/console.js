// The offer-signer web console: one page, its routes in the URL's fragment (#/apps/<bundleId>/offers, ...), talking
// to the admin API (/admin/v1/...) beside it. No framework and no build step. The session is an HttpOnly cookie the
// script never sees; the CSRF token comes from GET /admin/v1/session and is kept in `state.csrf` only (never in
// storage), sent as X-CSRF-Token with every change. Every text from the API is put in the page as text, never as
// HTML.
'use strict';

(() => {
  const API = 'v1'; // relative to /admin/, so the console works under a proxy's path prefix too
  const ROLES = ['viewer', 'editor', 'publisher', 'admin'];

  const state = {
    session: null, // {name, role, expiresAt}
    csrf: null,
    catalog: 'file',
    apps: [],
    app: null, // the bundle ID the pages show
    wanted: null, // the route asked for before signing in
    renderId: 0,
    chartDays: 30,
    leave: null, // what the current page does when it is left (timers)
  };

  const main = document.getElementById('main');

  // MARK: - DOM

  /** An element: `attrs` sets properties (`text`, `class`, `on`, `data`, `hidden`, ...) and attributes. */
  function h(tag, attrs, ...children) {
    const element = document.createElement(tag);
    setAttributes(element, attrs);
    append(element, children);
    return element;
  }

  /** An SVG element (the charts). */
  function s(tag, attrs, ...children) {
    const element = document.createElementNS('http://www.w3.org/2000/svg', tag);
    setAttributes(element, attrs);
    append(element, children);
    return element;
  }

  function setAttributes(element, attrs) {
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === 'text') element.textContent = String(value);
      else if (name === 'class') element.setAttribute('class', value);
      else if (name === 'on') for (const [event, handler] of Object.entries(value)) element.addEventListener(event, handler);
      else if (name === 'data') for (const [key, v] of Object.entries(value)) element.dataset[key] = String(v);
      else if (name === 'value') element.value = value;
      else if (name === 'checked' || name === 'disabled' || name === 'selected') element[name] = Boolean(value);
      else element.setAttribute(name, value === true ? '' : String(value));
    }
  }

  function append(element, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      element.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }

  /** An identifier that a narrow column may break after its dots (com.example.<wbr>pro.<wbr>monthly). */
  function breakable(text) {
    return text.split(/(?<=\.)/).flatMap((part, index) => (index ? [h('wbr'), part] : [part]));
  }

  /** A table cell with its column's name, shown beside it when a narrow screen stacks the table. */
  function cell(label, attrs, ...children) {
    const { text, ...rest } = attrs || {};
    return h('td', { ...rest, 'data-label': label }, h('div', { class: 'cell', text }, children));
  }

  function clear(element) {
    while (element.firstChild) element.firstChild.remove();
  }

  /** A banner at the top of the page: `kind` is `error`, `success` or `info`. */
  function banner(kind, message, ...extra) {
    const box = h('div', { class: `banner banner-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, message, extra);
    const slot = document.getElementById('banners');
    if (slot) {
      clear(slot);
      slot.append(box);
      box.scrollIntoView({ block: 'nearest' });
    }
    return box;
  }

  function clearBanners() {
    const slot = document.getElementById('banners');
    if (slot) clear(slot);
  }

  function badge(text, kind) {
    return h('span', { class: `badge badge-${kind || text}`, text });
  }

  function pad(number) {
    return String(number).padStart(2, '0');
  }

  /** Unix milliseconds as local `YYYY-MM-DD HH:MM`, the UTC time in its tooltip. */
  function time(ms) {
    if (ms === null || ms === undefined) return h('span', { class: 'muted', text: '—' });
    const date = new Date(ms);
    const text = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
      `${pad(date.getHours())}:${pad(date.getMinutes())}`;
    return h('time', { datetime: date.toISOString(), title: date.toISOString(), text });
  }

  /** A hash shortened to its first 16 characters, whole in its tooltip. */
  function hashView(hash) {
    if (!hash) return h('span', { class: 'muted', text: '—' });
    return h('code', { class: 'hash', title: hash, text: hash.length > 16 ? `${hash.slice(0, 16)}…` : hash });
  }

  function percent(fraction) {
    if (fraction === null || fraction === undefined) return '—';
    return `${(fraction * 100).toFixed(fraction < 0.1 && fraction > 0 ? 1 : 0)}%`;
  }

  function count(value) {
    return value === null || value === undefined ? '—' : String(value);
  }

  function can(role) {
    return state.session !== null && ROLES.indexOf(state.session.role) >= ROLES.indexOf(role);
  }

  /** The order of an offer's members in the editor: as docs/configuration.md writes them; others after, by name. */
  const MEMBER_ORDER = [
    'id', 'type', 'productIds', 'subscriptionGroupId', 'activeFrom', 'activeUntil', 'requiresVerifiedCustomer',
    'eligibility', 'limits', 'perCustomer', 'total', 'signatureTTLSeconds',
  ];

  function memberOrder(a, b) {
    const [x, y] = [MEMBER_ORDER.indexOf(a), MEMBER_ORDER.indexOf(b)];
    if (x !== y && (x < 0 || y < 0)) return x < 0 ? 1 : -1;
    return x !== y ? x - y : a < b ? -1 : a > b ? 1 : 0;
  }

  /** JSON for people: the same text for the same value whatever its members' order (offer members first, in
   * their usual order), two-space indents, and short arrays and objects kept on one line. */
  function pretty(value, indent = '') {
    const inner = indent + '  ';
    if (indent && oneLine(value).length <= 60) return oneLine(value);
    if (Array.isArray(value)) {
      if (!value.length) return '[]';
      return `[\n${value.map((item) => inner + pretty(item, inner)).join(',\n')}\n${indent}]`;
    }
    if (value && typeof value === 'object') {
      const keys = Object.keys(value).sort(memberOrder);
      if (!keys.length) return '{}';
      return `{\n${keys.map((key) => `${inner}${JSON.stringify(key)}: ${pretty(value[key], inner)}`).join(',\n')}\n${indent}}`;
    }
    return JSON.stringify(value);
  }

  function oneLine(value) {
    if (Array.isArray(value)) return `[${value.map(oneLine).join(', ')}]`;
    if (value && typeof value === 'object') {
      return `{${Object.keys(value).sort(memberOrder).map((key) => `${JSON.stringify(key)}: ${oneLine(value[key])}`).join(', ')}}`;
    }
    return JSON.stringify(value);
  }

  // MARK: - Admin API

  class ApiError extends Error {
    constructor(status, body) {
      const error = (body && body.error) || {};
      super(error.message || `The admin API answered ${status} without an explanation.`);
      this.status = status;
      this.code = error.code || 'http_' + status;
      this.details = error;
    }
  }

  /** Thrown after the page went back to the sign-in form: the interrupted page stops quietly. */
  class SignedOut extends Error {}

  async function api(method, path, body, headers) {
    const init = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers['Content-Type'] = 'application/json';
    }
    if (method !== 'GET' && method !== 'HEAD' && state.csrf) init.headers['X-CSRF-Token'] = state.csrf;
    Object.assign(init.headers, headers || {});
    let response;
    try {
      response = await fetch(API + path, init);
    } catch (error) {
      throw new ApiError(0, { error: { code: 'network', message: 'The admin API did not answer. Is the service running?' } });
    }
    const text = await response.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (error) {
        data = null;
      }
    }
    if (!response.ok) {
      const error = new ApiError(response.status, data);
      if (response.status === 401 && !(method === 'POST' && path === '/session')) {
        signedOut(error.code === 'session_expired'
          ? 'Your session has expired. Sign in again.'
          : state.session ? 'You are signed out. Sign in to continue.' : null);
        throw new SignedOut();
      }
      throw error;
    }
    return { data, headers: response.headers, status: response.status };
  }

  function appPath(suffix) {
    return `/apps/${encodeURIComponent(state.app)}${suffix}`;
  }

  /** Shows an API error (or any other) in the banner; nothing for a sign-out, which shows its own page. */
  function report(error, prefix) {
    if (error instanceof SignedOut) return;
    const message = error instanceof ApiError ? error.message : `Something went wrong in the console: ${error.message}`;
    banner('error', prefix ? `${prefix}: ${message}` : message);
  }

  // MARK: - Session

  function signedOut(message) {
    state.session = null;
    state.csrf = null;
    state.apps = [];
    if (!state.wanted && location.hash && !location.hash.startsWith('#/signin')) state.wanted = location.hash;
    renderChrome();
    showSignIn(message);
  }

  async function start() {
    window.addEventListener('hashchange', render);
    document.getElementById('sign-out').addEventListener('click', signOut);
    document.getElementById('app-select').addEventListener('change', (event) => {
      const page = currentPage() || 'offers';
      location.hash = `#/apps/${encodeURIComponent(event.target.value)}/${page}`;
    });
    try {
      const { data } = await api('GET', '/session');
      await signedIn(data);
    } catch (error) {
      if (error instanceof SignedOut) return;
      showSignIn(null);
      report(error);
    }
  }

  async function signedIn(session) {
    state.session = { name: session.name, role: session.role, expiresAt: session.expiresAt };
    state.csrf = session.csrfToken;
    const { data } = await api('GET', '/apps');
    state.catalog = data.catalog;
    state.apps = data.apps;
    renderChrome();
    const wanted = state.wanted;
    state.wanted = null;
    if (wanted && wanted !== location.hash) location.hash = wanted;
    else render();
  }

  async function signOut() {
    try {
      await api('DELETE', '/session');
    } catch (error) {
      if (error instanceof SignedOut) return;
      report(error, 'Could not sign out');
      return;
    }
    state.wanted = null;
    signedOut('You have signed out.');
  }

  function showSignIn(message) {
    state.renderId += 1;
    leavePage();
    if (location.hash !== '#/signin') history.replaceState(null, '', '#/signin');
    const input = h('input', {
      id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true,
      placeholder: 'osa_…', 'aria-describedby': 'token-help',
    });
    const failure = h('p', { id: 'signin-error', class: 'field-error', role: 'alert', hidden: true });
    const button = h('button', { type: 'submit', class: 'button-primary', text: 'Sign in' });
    const form = h('form', { id: 'signin-form', class: 'signin card', novalidate: true },
      h('h1', { text: 'Sign in' }),
      message ? h('p', { class: 'banner banner-info', id: 'signin-message', role: 'status', text: message }) : null,
      h('label', { for: 'token', text: 'Admin token' }),
      input,
      h('p', { id: 'token-help', class: 'help' },
        'A token made with ', h('code', { text: 'offer-signer admin token create' }),
        '. It is exchanged for a session cookie and not kept by this page.'),
      failure,
      button);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      failure.hidden = true;
      const token = input.value.trim();
      if (!token) {
        failure.textContent = 'Paste your admin token first.';
        failure.hidden = false;
        return;
      }
      button.disabled = true;
      try {
        const { data } = await api('POST', '/session', { token });
        input.value = '';
        await signedIn(data);
      } catch (error) {
        if (error instanceof SignedOut) return;
        failure.textContent = error.message;
        failure.hidden = false;
      } finally {
        button.disabled = false;
      }
    });
    clear(main);
    main.append(form);
    input.focus();
  }

  // MARK: - Pages and navigation

  const PAGES = [
    ['offers', 'Offers'],
    ['editor', 'Editor'],
    ['publish', 'Publish'],
    ['versions', 'Versions'],
    ['simulate', 'Simulate'],
    ['charts', 'Charts'],
    ['apple', 'App Store Connect'],
  ];

  const ROUTES = [
    [/^#\/apps\/([^/]+)\/offers$/, (app) => pageOffers(app)],
    [/^#\/apps\/([^/]+)\/editor$/, (app) => pageEditor(app)],
    [/^#\/apps\/([^/]+)\/publish$/, (app) => pagePublish(app)],
    [/^#\/apps\/([^/]+)\/versions$/, (app) => pageVersions(app)],
    [/^#\/apps\/([^/]+)\/simulate$/, (app) => pageSimulate(app)],
    [/^#\/apps\/([^/]+)\/charts$/, (app) => pageCharts(app)],
    [/^#\/apps\/([^/]+)\/apple$/, (app) => pageApple(app)],
    [/^#\/audit$/, () => pageAudit()],
  ];

  function currentPage() {
    const match = /^#\/apps\/[^/]+\/([a-z]+)$/.exec(location.hash);
    if (match) return match[1];
    return location.hash === '#/audit' ? 'audit' : null;
  }

  function renderChrome() {
    const signed = state.session !== null;
    document.getElementById('who').hidden = !signed;
    document.getElementById('nav').hidden = !signed;
    if (!signed) return;
    document.getElementById('who-name').textContent = `${state.session.name} · ${state.session.role}`;
    const select = document.getElementById('app-select');
    clear(select);
    for (const app of state.apps) {
      select.append(h('option', { value: app.bundleId, text: app.bundleId, selected: app.bundleId === state.app }));
    }
    // One app: its name as text (a disabled control would be greyed out for no reason).
    select.parentElement.hidden = state.apps.length < 2;
    const only = document.getElementById('app-name');
    only.hidden = state.apps.length >= 2;
    only.textContent = state.app || (state.apps[0] && state.apps[0].bundleId) || '';
    const links = document.getElementById('nav-links');
    clear(links);
    const page = currentPage();
    const app = encodeURIComponent(state.app || (state.apps[0] && state.apps[0].bundleId) || '');
    for (const [name, label] of PAGES) {
      links.append(h('li', null, h('a', {
        href: `#/apps/${app}/${name}`, text: label, id: `nav-${name}`,
        'aria-current': page === name ? 'page' : null,
      })));
    }
    links.append(h('li', null, h('a', {
      href: '#/audit', text: 'Audit log', id: 'nav-audit', 'aria-current': page === 'audit' ? 'page' : null,
    })));
  }

  function leavePage() {
    if (state.leave) state.leave();
    state.leave = null;
  }

  /** Renders the page of the URL's fragment into a fresh container; a page still loading when another is asked
   * for is dropped (its `alive()` turns false). */
  async function render() {
    if (state.session === null) {
      if (location.hash !== '#/signin' && location.hash) state.wanted = location.hash;
      showSignIn(null);
      return;
    }
    leavePage();
    const id = ++state.renderId;
    const alive = () => id === state.renderId;
    let handler = null;
    let argument = null;
    for (const [pattern, page] of ROUTES) {
      const match = pattern.exec(location.hash);
      if (match) {
        handler = page;
        argument = match[1] ? decodeURIComponent(match[1]) : null;
        break;
      }
    }
    if (argument !== null && !state.apps.some((app) => app.bundleId === argument)) handler = null;
    if (!handler) {
      const first = state.app || (state.apps[0] && state.apps[0].bundleId);
      if (!first) {
        renderChrome();
        clear(main);
        main.append(h('div', { class: 'card' }, h('h1', { text: 'No apps' }),
          h('p', { text: 'The service has no app configured.' })));
        return;
      }
      history.replaceState(null, '', `#/apps/${encodeURIComponent(first)}/offers`);
      return render();
    }
    if (argument !== null) state.app = argument;
    renderChrome();
    const page = h('div', { class: 'page', id: `page-${currentPage()}` }, h('div', { id: 'banners' }));
    clear(main);
    main.append(page);
    try {
      await handler(argument).then((build) => {
        if (alive() && build) build(page);
      });
    } catch (error) {
      if (alive()) report(error);
    }
    if (alive()) page.dataset.ready = 'true';
  }

  function heading(title, ...extra) {
    return h('div', { class: 'page-head' }, h('h1', { text: title }), extra);
  }

  function currentApp() {
    return state.apps.find((app) => app.bundleId === state.app) || null;
  }

  async function refreshApps() {
    const { data } = await api('GET', '/apps');
    state.catalog = data.catalog;
    state.apps = data.apps;
  }

  // MARK: - Offers

  async function pageOffers() {
    const { data } = await api('GET', appPath('/offers'));
    return (page) => {
      const app = currentApp();
      const summary = [];
      if (data.version !== null && data.version !== undefined) summary.push(`Live version ${data.version}`);
      if (app && app.draftRevision) summary.push(`draft revision ${app.draftRevision} not published yet`);
      page.append(heading('Offers', h('p', { class: 'muted', text: summary.join(' · ') || state.app })));
      if (!data.offers.length) {
        page.append(h('div', { class: 'card empty' }, 'No offers yet. ',
          state.catalog === 'storage' ? h('a', { href: `#/apps/${encodeURIComponent(state.app)}/editor`, text: 'Add one in the editor.' }) : null));
        return;
      }
      const rows = data.offers.map((offer) => h('tr', { data: { offerId: offer.id }, class: 'offer-row' },
        cell('Offer', null, h('strong', { class: 'offer-id', text: offer.id }),
          h('div', { class: 'muted small', text: offer.type }),
          offer.productIds.map((product) => h('div', { class: 'muted small product' }, breakable(product)))),
        cell('State', null, badge(offer.state)),
        cell('Window', null, windowText(offer.activeFrom, offer.activeUntil)),
        cell('Who', { class: 'rule-cell' }, offer.rule ? ruleFromText(offer.rule) : h('span', { class: 'muted', text: 'everyone' }),
          offer.requiresVerifiedCustomer ? null : h('div', { class: 'muted small', text: 'no verified customer needed' })),
        cell('Limits', null, limitsText(offer.limits)),
        cell('Issued', { class: 'number' }, count(offer.stats && offer.stats.issued)),
        cell('Redeemed', { class: 'number' }, count(offer.stats && offer.stats.redeemed)),
        cell('Conversion', { class: 'number' }, percent(offer.stats && offer.stats.conversion))));
      page.append(h('div', { class: 'card table-card' }, h('table', { class: 'table stack', id: 'offers-table' },
        h('thead', null, h('tr', null, ['Offer', 'State', 'Window', 'Who', 'Limits', 'Issued', 'Redeemed', 'Conversion']
          .map((title) => h('th', { scope: 'col', text: title })))),
        h('tbody', null, rows))));
    };
  }

  function windowText(from, until) {
    if (!from && !until) return h('span', { class: 'muted', text: 'always' });
    return h('span', null, from ? ['from ', time(from)] : null, from && until ? h('br') : null, until ? ['until ', time(until)] : null);
  }

  function duration(seconds) {
    if (seconds % 3600 === 0) return `${seconds / 3600} h`;
    if (seconds % 60 === 0) return `${seconds / 60} min`;
    return `${seconds} s`;
  }

  /** A JSON box as tall as its text, wrapped lines included (6 to 40 lines), so nothing hides in it. */
  function fit(textarea) {
    textarea.rows = Math.min(40, Math.max(6, textarea.value.split('\n').length + 1));
    while (textarea.scrollHeight > textarea.clientHeight && textarea.rows < 40) textarea.rows += 1;
  }

  // A narrower window wraps more lines: the boxes grow with it.
  let refit = 0;
  window.addEventListener('resize', () => {
    cancelAnimationFrame(refit);
    refit = requestAnimationFrame(() => document.querySelectorAll('textarea.offer-json').forEach(fit));
  });

  function limitsText(limits) {
    if (!limits) return h('span', { class: 'muted', text: 'none' });
    const parts = [];
    if (limits.perCustomer !== undefined && limits.perCustomer !== null) parts.push(`${limits.perCustomer} per customer`);
    if (limits.total !== undefined && limits.total !== null) parts.push(`${limits.total} in all`);
    if (limits.signatureTTLSeconds !== undefined && limits.signatureTTLSeconds !== null) parts.push(`each signature valid ${duration(limits.signatureTTLSeconds)}`);
    return parts.join(', ') || 'none';
  }

  // MARK: - Readable rules

  const STATUS = {
    active: 'active', expired: 'expired', inGracePeriod: 'in its grace period', inBillingRetry: 'in billing retry',
    revoked: 'revoked (refunded)',
  };
  const INTENT = {
    1: 'the customer cancelled', 2: 'a billing error', 3: 'a price increase not accepted',
    4: 'the product was not available', 5: 'another reason',
  };

  function orList(values, names) {
    const words = values.map((value) => (names && names[value]) || String(value));
    if (words.length < 2) return words.join('');
    return `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`;
  }

  function daysText(range, what) {
    if (!range || typeof range !== 'object') return null;
    const { min, max } = range;
    if (min !== undefined && max !== undefined) return `${what} between ${min} and ${max} days`;
    if (min !== undefined) return `${what} at least ${min} days`;
    if (max !== undefined) return `${what} at most ${max} days`;
    return null;
  }

  /** A rule of an offer's `eligibility` as a nested list in plain words. */
  function ruleView(rule) {
    const list = h('ul', { class: 'rule' });
    list.append(ruleItem(rule));
    return list;
  }

  function ruleItem(rule) {
    if (!rule || typeof rule !== 'object' || Array.isArray(rule) || Object.keys(rule).length !== 1) {
      return h('li', { class: 'rule-bad', text: 'A rule is an object with one member, such as {"always": true}.' });
    }
    const [name, value] = Object.entries(rule)[0];
    const group = (title, rules) => h('li', null, title,
      Array.isArray(rules) ? h('ul', null, rules.map(ruleItem)) : h('ul', null, ruleItem(rules)));
    const text = (() => {
      switch (name) {
        case 'always': return value === true ? 'Everyone' : null;
        case 'all': return Array.isArray(value) ? group('All of these:', value) : null;
        case 'any': return Array.isArray(value) ? group('At least one of these:', value) : null;
        case 'not': return group('Not this:', value);
        case 'subscriptionStatus': return Array.isArray(value) ? `The subscription is ${orList(value, STATUS)}` : null;
        case 'daysSinceExpiry': return daysText(value, 'It expired');
        case 'daysSubscribed': return daysText(value, 'Subscribed for');
        case 'autoRenew': return typeof value === 'boolean' ? `Auto-renew is ${value ? 'on' : 'off'}` : null;
        case 'signedDataAgeDays': return daysText(value, 'Apple signed the data sent');
        case 'expirationIntent': return Array.isArray(value) ? `It expired because of ${orList(value, INTENT)}` : null;
        case 'storefronts': return Array.isArray(value) ? `The storefront is ${orList(value)}` : null;
        case 'environments': return Array.isArray(value) ? `The environment is ${orList(value)}` : null;
        case 'productIds': return Array.isArray(value) ? `The subscription's product is ${orList(value)}` : null;
        case 'ownership': return Array.isArray(value)
          ? `Ownership is ${orList(value, { PURCHASED: 'purchased', FAMILY_SHARED: 'family shared' })}` : null;
        case 'rollout': return value && typeof value === 'object'
          ? `${value.percent}% of customers (a stable share; salt "${value.salt}")` : null;
        default: return h('li', { class: 'rule-bad', text: `Unknown rule "${name}"` });
      }
    })();
    if (text === null) return h('li', { class: 'rule-bad', text: `"${name}" is not written as it should be` });
    return text instanceof Node ? text : h('li', { text: name === 'daysSinceExpiry' ? `${text} ago` : text });
  }

  /** A rule the API sends as its JSON text, in plain words (the text itself if it is not JSON). */
  function ruleFromText(text) {
    try {
      return ruleView(JSON.parse(text));
    } catch (error) {
      return text;
    }
  }

  /** What the editor shows beside an offer: who, when, limits. */
  function offerSummary(offer) {
    if (!offer || typeof offer !== 'object' || Array.isArray(offer)) return h('p', { class: 'muted', text: 'Not an offer object.' });
    const when = offer.activeFrom || offer.activeUntil
      ? [offer.activeFrom ? `from ${offer.activeFrom}` : null, offer.activeUntil ? `until ${offer.activeUntil}` : null]
        .filter(Boolean).join(' ')
      : 'always';
    return h('div', { class: 'offer-summary' },
      h('h4', { text: 'Who can have it' }),
      offer.eligibility === undefined ? h('ul', { class: 'rule' }, h('li', { text: 'Everyone' })) : ruleView(offer.eligibility),
      offer.requiresVerifiedCustomer === false
        ? h('p', { class: 'small', text: 'Also for requests without Apple-signed data.' }) : null,
      h('h4', { text: 'When' }), h('p', { text: when }),
      offer.limits ? [h('h4', { text: 'Limits' }), h('p', { text: limitsText(offer.limits) })] : null);
  }

  // MARK: - JSON positions (to put the cursor on the field an error names)

  /** The [start, end) of the member or element at `path` (like `limits.total` or `productIds[0]`) in `text`,
   * or null. A small reader of JSON that only tracks positions. */
  function locate(text, path) {
    const want = [];
    const re = /([^.[\]]+)|\[(\d+)\]/g;
    let m;
    while ((m = re.exec(path)) !== null) want.push(m[1] !== undefined ? m[1] : Number(m[2]));
    let i = 0;
    const ws = () => { while (i < text.length && /\s/.test(text[i])) i += 1; };
    const str = () => {
      const start = i;
      i += 1;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i += 1;
      try { return [JSON.parse(text.slice(start, i)), start]; } catch (e) { return [null, start]; }
    };
    const skip = () => {
      ws();
      if (text[i] === '"') { str(); return; }
      if (text[i] === '{' || text[i] === '[') {
        const close = text[i] === '{' ? '}' : ']';
        i += 1;
        ws();
        if (text[i] === close) { i += 1; return; }
        for (;;) {
          ws();
          if (close === '}') { str(); ws(); i += 1; }
          skip();
          ws();
          if (text[i] === ',') { i += 1; continue; }
          i += 1;
          return;
        }
      }
      while (i < text.length && !/[\s,\]}]/.test(text[i])) i += 1;
    };
    const find = (depth) => {
      ws();
      if (depth === want.length) {
        const start = i;
        skip();
        return [start, i];
      }
      const key = want[depth];
      if (text[i] === '{' && typeof key === 'string') {
        i += 1;
        for (;;) {
          ws();
          if (text[i] !== '"') return null;
          const [name, start] = str();
          ws();
          i += 1; // the colon
          if (name === key) {
            if (depth + 1 === want.length) {
              ws();
              const valueStart = i;
              skip();
              return [start, Math.max(i, valueStart)];
            }
            return find(depth + 1);
          }
          skip();
          ws();
          if (text[i] !== ',') return null;
          i += 1;
        }
      }
      if (text[i] === '[' && typeof key === 'number') {
        i += 1;
        for (let index = 0; ; index += 1) {
          ws();
          if (text[i] === ']') return null;
          if (index === key) return find(depth + 1);
          skip();
          ws();
          if (text[i] !== ',') return null;
          i += 1;
        }
      }
      return null;
    };
    try {
      return find(0);
    } catch (error) {
      return null;
    }
  }

  /** The (1-based) line of offset `at` in `text`. */
  function lineOf(text, at) {
    return text.slice(0, at).split('\n').length;
  }

  // MARK: - Editor

  const NEW_OFFER = { id: '', type: 'promotional', productIds: [''], eligibility: { always: true } };

  async function pageEditor() {
    const { data: draft, headers } = await api('GET', appPath('/catalog/draft'));
    const etag = headers.get('ETag');
    return (page) => buildEditor(page, draft, etag);
  }

  function buildEditor(page, draft, etag) {
    const editable = state.catalog === 'storage' && can('editor');
    const editor = {
      revision: draft.revision,
      etag: etag || `"${draft.revision}"`,
      cards: [],
      timer: null,
      checking: 0,
      dirty: false,
    };
    const facts = [];
    if (draft.revision > 0) {
      facts.push(`Revision ${draft.revision}`);
      if (draft.basedOn !== null && draft.basedOn !== undefined) facts.push(`based on version ${draft.basedOn}`);
      if (draft.updatedBy) facts.push(`saved by ${draft.updatedBy}`);
    } else {
      facts.push(draft.basedOn ? `No draft yet: this is live version ${draft.basedOn}` : 'No draft yet');
    }
    const saved = h('p', { class: 'muted', id: 'draft-facts' }, facts.join(', '),
      draft.updatedAt ? [' at ', time(draft.updatedAt)] : null);
    page.append(heading('Editor', saved));
    if (state.catalog !== 'storage') {
      page.append(h('div', { class: 'banner banner-info', role: 'status' },
        'This service reads its offers from its configuration file (', h('code', { text: 'catalog: "file"' }),
        '). Change them in the file and reload the service, or set ', h('code', { text: 'catalog' }), ' to ',
        h('code', { text: '"storage"' }), ' to edit them here.'));
    } else if (!can('editor')) {
      page.append(h('div', { class: 'banner banner-info', role: 'status', text: 'Your role can read the draft but not change it (editor or above can).' }));
    }

    const documentErrors = h('ul', { class: 'field-errors', id: 'document-errors', hidden: true });
    const cards = h('div', { class: 'offer-cards', id: 'offer-cards' });
    const status = h('span', { class: 'check-status', id: 'check-status', role: 'status' });
    const addButton = h('button', { type: 'button', id: 'add-offer', text: 'Add offer', disabled: !editable });
    const saveButton = h('button', { type: 'button', class: 'button-primary', id: 'save-draft', text: 'Save draft', disabled: !editable });
    const discardButton = h('button', { type: 'button', id: 'discard-draft', class: 'button-quiet', text: 'Discard draft', disabled: !editable || draft.revision === 0 });
    const publishLink = h('a', { class: 'button-link', href: `#/apps/${encodeURIComponent(state.app)}/publish`, text: 'Review and publish →' });

    const initial = draft.document || { offers: [] };
    for (const offer of initial.offers || []) addCard(offer);
    const retentionText = h('textarea', {
      id: 'retention-json', class: 'json', rows: 6, spellcheck: 'false', 'aria-label': 'Retention entries (JSON)', disabled: !editable,
      value: pretty(initial.retention || []),
    });
    const retentionErrors = h('ul', { class: 'field-errors', hidden: true, id: 'retention-errors' });
    const retention = h('details', { class: 'card retention', open: (initial.retention || []).length > 0 },
      h('summary', null, h('h3', { text: 'Retention Messaging entries' })),
      h('p', { class: 'help', text: 'What Apple shows a customer who is about to cancel: a list, as in the configuration file.' }),
      retentionText, retentionErrors);
    retentionText.addEventListener('input', changed);

    page.append(h('div', { class: 'toolbar sticky' }, addButton, saveButton, discardButton, publishLink, status));
    page.append(documentErrors, cards, retention);

    addButton.addEventListener('click', () => {
      const card = addCard(NEW_OFFER);
      card.text.focus();
      card.text.setSelectionRange(card.text.value.indexOf('""') + 1, card.text.value.indexOf('""') + 1);
      changed();
    });
    saveButton.addEventListener('click', save);
    discardButton.addEventListener('click', discard);
    state.leave = () => clearTimeout(editor.timer);
    if (editable) validate();

    function addCard(offer) {
      const index = editor.cards.length;
      const text = h('textarea', {
        class: 'json offer-json', rows: 6, spellcheck: 'false',
        'aria-label': `Offer ${index + 1} (JSON)`, disabled: !editable, value: pretty(offer),
      });
      const title = h('h3', { class: 'offer-title' });
      const errors = h('ul', { class: 'field-errors', hidden: true });
      const summary = h('div', { class: 'offer-side' });
      const remove = h('button', { type: 'button', class: 'button-quiet button-small', text: 'Remove', disabled: !editable });
      const element = h('section', { class: 'card offer-card' },
        h('div', { class: 'offer-card-head' }, title, remove),
        h('div', { class: 'offer-card-body' }, h('div', { class: 'offer-main' }, text, errors), summary));
      const card = { element, text, title, errors, summary, parsed: offer, parseError: null };
      editor.cards.push(card);
      cards.append(element);
      requestAnimationFrame(() => fit(text));
      text.addEventListener('input', () => { fit(text); readCard(card); changed(); });
      remove.addEventListener('click', () => {
        const id = (card.parsed && card.parsed.id) || 'this offer';
        if (!window.confirm(`Remove ${id} from the draft?`)) return;
        editor.cards.splice(editor.cards.indexOf(card), 1);
        element.remove();
        renumber();
        changed();
      });
      readCard(card);
      renumber();
      return card;
    }

    function renumber() {
      editor.cards.forEach((card, index) => {
        card.index = index;
        card.element.dataset.index = String(index);
        card.text.setAttribute('aria-label', `Offer ${index + 1} (JSON)`);
        card.element.dataset.offerId = (card.parsed && typeof card.parsed.id === 'string') ? card.parsed.id : '';
      });
    }

    function readCard(card) {
      try {
        card.parsed = JSON.parse(card.text.value);
        card.parseError = null;
      } catch (error) {
        card.parsed = undefined;
        card.parseError = error.message;
      }
      const id = card.parsed && typeof card.parsed.id === 'string' && card.parsed.id ? card.parsed.id : 'New offer';
      card.title.textContent = id;
      card.element.dataset.offerId = card.parsed && typeof card.parsed.id === 'string' ? card.parsed.id : '';
      clear(card.summary);
      if (card.parsed !== undefined) card.summary.append(offerSummary(card.parsed));
    }

    function changed() {
      editor.dirty = true;
      status.textContent = 'Checking…';
      status.className = 'check-status';
      clearTimeout(editor.timer);
      editor.timer = setTimeout(validate, 350);
    }

    /** The document the cards and the retention box hold, or null (with the JSON mistakes shown) when one of
     * them is not JSON. */
    function collect() {
      let ok = true;
      const offers = [];
      for (const card of editor.cards) {
        if (card.parseError) {
          ok = false;
          showErrors(card.errors, [{ field: '', message: `Not valid JSON: ${card.parseError}` }], card.text);
        } else {
          offers.push(card.parsed);
        }
      }
      let retentionValue;
      try {
        retentionValue = JSON.parse(retentionText.value || '[]');
      } catch (error) {
        ok = false;
        showErrors(retentionErrors, [{ field: '', message: `Not valid JSON: ${error.message}` }], retentionText);
      }
      return ok ? { offers, retention: retentionValue } : null;
    }

    async function validate() {
      clearTimeout(editor.timer);
      for (const card of editor.cards) showErrors(card.errors, [], card.text);
      showErrors(retentionErrors, [], retentionText);
      showErrors(documentErrors, [], null);
      const catalog = collect();
      if (!catalog) {
        status.textContent = 'Fix the JSON first.';
        status.className = 'check-status check-bad';
        return false;
      }
      const ticket = ++editor.checking;
      try {
        const { data } = await api('POST', appPath('/catalog/validate'), { document: catalog });
        if (ticket !== editor.checking) return false;
        placeErrors(data.errors || []);
        status.textContent = data.valid ? 'No problems found.' : `${data.errors.length} problem${data.errors.length === 1 ? '' : 's'} to fix.`;
        status.className = `check-status ${data.valid ? 'check-ok' : 'check-bad'}`;
        return data.valid;
      } catch (error) {
        if (ticket !== editor.checking) return false;
        status.textContent = '';
        report(error, 'Could not check the draft');
        return false;
      }
    }

    /** Puts each `{path, message}` beside its offer (and names the field), its retention entry, or the document. */
    function placeErrors(errors) {
      const byCard = new Map();
      const forRetention = [];
      const forDocument = [];
      for (const error of errors) {
        const offer = /^\$\.offers\[(\d+)\]\.?(.*)$/.exec(error.path || '');
        if (offer && editor.cards[Number(offer[1])]) {
          const card = editor.cards[Number(offer[1])];
          if (!byCard.has(card)) byCard.set(card, []);
          byCard.get(card).push({ field: offer[2], path: error.path, message: error.message });
        } else if (/^\$\.retention/.test(error.path || '')) {
          forRetention.push({ field: error.path.replace(/^\$\.retention\.?/, ''), path: error.path, message: error.message });
        } else {
          forDocument.push({ field: error.path || '', path: error.path, message: error.message });
        }
      }
      for (const card of editor.cards) showErrors(card.errors, byCard.get(card) || [], card.text);
      showErrors(retentionErrors, forRetention, retentionText);
      showErrors(documentErrors, forDocument, null);
    }

    function showErrors(list, errors, textarea) {
      clear(list);
      list.hidden = errors.length === 0;
      const card = list.closest('.card');
      if (card) card.classList.toggle('has-errors', errors.length > 0);
      if (textarea) textarea.setAttribute('aria-invalid', errors.length ? 'true' : 'false');
      for (const error of errors) {
        const place = textarea && error.field ? locate(textarea.value, error.field) : null;
        const where = place ? `line ${lineOf(textarea.value, place[0])}` : null;
        const item = h('li', { class: 'field-error', data: { path: error.path || '', field: error.field || '' } },
          error.field ? h('code', { class: 'field-name', text: error.field }) : null,
          error.field ? ' ' : null,
          h('span', { class: 'field-message', text: error.message }),
          where ? h('span', { class: 'muted small', text: ` (${where})` }) : null);
        if (place) {
          item.classList.add('clickable');
          item.title = 'Show this field';
          item.addEventListener('click', () => {
            textarea.focus();
            textarea.setSelectionRange(place[0], place[1]);
          });
        }
        list.append(item);
      }
    }

    async function save() {
      clearBanners();
      const catalog = collect();
      if (!catalog) {
        banner('error', 'The draft was not saved: an offer is not valid JSON.');
        return;
      }
      saveButton.disabled = true;
      try {
        const { data, headers } = await api('PUT', appPath('/catalog/draft'), { document: catalog }, { 'If-Match': editor.etag });
        editor.revision = data.revision;
        editor.etag = headers.get('ETag') || `"${data.revision}"`;
        editor.dirty = false;
        discardButton.disabled = false;
        clear(saved);
        // The helper, not Element.append: it flattens the [' at ', <time>] pair (the native one printed an array).
        append(saved, [`Revision ${data.revision}`, data.basedOn !== null && data.basedOn !== undefined ? `, based on version ${data.basedOn}` : '',
          data.updatedBy ? `, saved by ${data.updatedBy}` : '', data.updatedAt ? [' at ', time(data.updatedAt)] : '']);
        placeErrors([]);
        status.textContent = 'No problems found.';
        status.className = 'check-status check-ok';
        banner('success', `Draft saved (revision ${data.revision}).`);
        refreshApps().catch(() => {});
      } catch (error) {
        if (error instanceof SignedOut) return;
        if (error.code === 'version_conflict') {
          const reload = h('button', { type: 'button', id: 'reload-draft', text: 'Load their version' });
          reload.addEventListener('click', () => render());
          banner('error', `Someone else changed this draft meanwhile (it is now at revision ${error.details.current}). ` +
            'Your text is still here: copy what you need, then load their version and apply your changes again. ', reload);
        } else if (error.code === 'invalid_catalog') {
          placeErrors(error.details.errors || []);
          banner('error', `The draft was not saved: ${error.message}`);
        } else {
          report(error, 'The draft was not saved');
        }
      } finally {
        saveButton.disabled = !editable;
      }
    }

    async function discard() {
      if (!window.confirm('Discard the draft and go back to the live version?')) return;
      clearBanners();
      try {
        await api('DELETE', appPath('/catalog/draft'), undefined, { 'If-Match': editor.etag });
        await refreshApps();
        await render();
        banner('success', 'The draft was discarded.');
      } catch (error) {
        if (error.code === 'version_conflict') {
          banner('error', 'Someone else changed this draft meanwhile; it was not discarded. Reload the page to see their version.');
        } else {
          report(error, 'The draft was not discarded');
        }
      }
    }
  }

  // MARK: - Publish

  async function pagePublish() {
    const [{ data: draft }, { data: diff }] = await Promise.all([
      api('GET', appPath('/catalog/draft')),
      api('GET', appPath('/catalog/diff?from=live&to=draft')),
    ]);
    return (page) => {
      const changes = diff.offers.filter((offer) => offer.change !== 'unchanged');
      const unchanged = diff.offers.filter((offer) => offer.change === 'unchanged');
      const from = diff.from === null || diff.from === undefined ? 'no published version' : `live version ${diff.from}`;
      const summary = h('p', { class: 'muted', id: 'publish-summary', text: `Changes from ${from} to draft revision ${draft.revision}` });
      page.append(heading('Publish', summary));
      const nothing = changes.length === 0 && !diff.retentionChanged;
      const list = h('div', { class: 'diff-list', id: 'diff' });
      if (nothing) {
        list.append(h('div', { class: 'card empty', id: 'no-changes', text: draft.revision === 0
          ? 'There is no draft: nothing to publish. Make changes in the editor and save them first.'
          : 'The draft has no changes from the live version.' }));
      }
      for (const offer of changes) {
        list.append(h('section', { class: `card diff-card diff-${offer.change}`, data: { offerId: offer.id, change: offer.change } },
          h('div', { class: 'offer-card-head' }, h('h3', { text: offer.id }), badge(offer.change)),
          diffView(offer.before, offer.after)));
      }
      if (diff.retentionChanged) {
        list.append(h('div', { class: 'card diff-card diff-changed', id: 'retention-changed' },
          h('div', { class: 'offer-card-head' }, h('h3', { text: 'Retention Messaging entries' }), badge('changed'))));
      }
      if (unchanged.length) {
        list.append(h('p', { class: 'muted' }, `Unchanged: ${unchanged.map((offer) => offer.id).join(', ')}`));
      }
      page.append(list);

      const message = h('input', { id: 'publish-message', type: 'text', maxlength: 500, required: true,
        placeholder: 'What changes, and why' });
      const button = h('button', { type: 'submit', class: 'button-primary', id: 'publish-button', text: 'Publish',
        disabled: nothing || !can('publisher') || state.catalog !== 'storage' });
      const form = h('form', { class: 'card publish-form', id: 'publish-form', novalidate: true },
        h('label', { for: 'publish-message', text: 'Message' }), message,
        h('p', { class: 'help', text: 'Shown in the versions list and the audit log.' }),
        !can('publisher') ? h('p', { class: 'help', text: 'Publishing needs the publisher role.' }) : null,
        h('div', { class: 'toolbar' }, button));
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        clearBanners();
        if (!message.value.trim()) {
          banner('error', 'Write a message first: it tells others what this version changes.');
          message.focus();
          return;
        }
        button.disabled = true;
        try {
          const { data } = await api('POST', appPath('/catalog/publish'), { message: message.value.trim(), draftRevision: draft.revision });
          await refreshApps();
          renderChrome();
          clear(list);
          form.remove();
          // The diff above was of the version that is no longer live: say what is live now instead.
          summary.textContent = `Version ${data.version} is live, published from draft revision ${draft.revision}`;
          banner('success', `Published version ${data.version}. Every replica serves it within seconds.`);
          list.append(h('p', null, h('a', { href: `#/apps/${encodeURIComponent(state.app)}/versions`, text: 'See the versions' }), ' · ',
            h('a', { href: `#/apps/${encodeURIComponent(state.app)}/offers`, text: 'See the offers' })));
        } catch (error) {
          button.disabled = false;
          if (error.code === 'version_conflict') {
            banner('error', 'The draft changed since this page was loaded, so it was not published. Reload the page and review the changes again.');
          } else if (error.code === 'invalid_catalog') {
            banner('error', `The draft was not published: ${error.message}. Fix it in the editor.`);
          } else if (error.code === 'catalog_check_failed' || error.code === 'app_store_connect_unavailable') {
            banner('error', `Not published: ${error.message}`);
            showForce(error);
          } else {
            report(error, 'Not published');
          }
        }
      });
      page.append(form);

      /** What App Store Connect disagrees with, and publishing anyway with a reason the audit log keeps. */
      function showForce(error) {
        const old = document.getElementById('force-form');
        if (old) old.remove();
        const reason = h('input', { id: 'force-reason', type: 'text', maxlength: 500, required: true,
          placeholder: 'Why this may go live anyway' });
        const forceButton = h('button', { type: 'submit', class: 'button-primary', id: 'force-button', text: 'Publish anyway' });
        const findings = (error.details.findings || []).filter((finding) => finding.severity === 'error');
        const forceForm = h('form', { class: 'card publish-form', id: 'force-form', novalidate: true },
          findings.length ? findingsTable(findings, 'force-findings') : null,
          h('label', { for: 'force-reason', text: 'Reason to publish anyway' }), reason,
          h('p', { class: 'help', text: 'The audit log keeps the reason with what App Store Connect disagreed with.' }),
          h('div', { class: 'toolbar' }, forceButton));
        forceForm.addEventListener('submit', async (event) => {
          event.preventDefault();
          if (!reason.value.trim()) {
            banner('error', 'Write the reason first: the audit log keeps it.');
            reason.focus();
            return;
          }
          forceButton.disabled = true;
          try {
            const { data } = await api('POST', appPath('/catalog/publish'),
              { message: message.value.trim(), draftRevision: draft.revision, force: reason.value.trim() });
            await refreshApps();
            renderChrome();
            clear(list);
            form.remove();
            forceForm.remove();
            summary.textContent = `Version ${data.version} is live, published from draft revision ${draft.revision}`;
            banner('success', `Published version ${data.version} despite App Store Connect; the reason is in the audit log.`);
          } catch (failure) {
            forceButton.disabled = false;
            report(failure, 'Not published');
          }
        });
        page.append(forceForm);
      }
    };
  }

  /** Findings of the check against App Store Connect, as a table. */
  function findingsTable(findings, id) {
    const body = h('tbody');
    for (const finding of findings) {
      body.append(h('tr', { class: 'finding-row', data: { code: finding.code, severity: finding.severity } },
        cell('Severity', null, badge(finding.severity)),
        cell('Code', null, h('code', { text: finding.code })),
        cell('Where', { class: 'wrap' }, h('code', { text: finding.path })),
        cell('Apple', { class: 'wrap', text: finding.appleId || '' }),
        cell('What', { class: 'wrap', text: finding.message })));
    }
    return h('div', { class: 'table-card' }, h('table', { class: 'table stack', id },
      h('thead', null, h('tr', null, ['Severity', 'Code', 'Where', 'Apple', 'What'].map((title) => h('th', { scope: 'col', text: title })))),
      body));
  }

  // MARK: - App Store Connect

  const TEMPLATES = [
    ['expired', 'Expired subscribers', { subscriptionStatus: ['expired'] }],
    ['lapsed30', 'Expired 30 days or more', { all: [{ subscriptionStatus: ['expired'] }, { daysSinceExpiry: { min: 30 } }] }],
    ['everyone', 'Everyone (no rule)', { always: true }],
  ];

  async function pageApple() {
    const { data } = await api('GET', appPath('/app-store-connect'));
    return (page) => {
      if (!data.configured) {
        page.append(heading('App Store Connect'), h('div', { class: 'card empty', id: 'apple-unconfigured',
          text: 'This app has no "appStoreConnect" key in the configuration, so its catalog is not checked against App Store Connect.' }));
        return;
      }
      const status = data.readAt === null
        ? 'Not read yet: the service reads it at start and every hour.'
        : `Read ${time(data.readAt).textContent || ''} · ${data.subscriptions} subscription(s)`;
      const refresh = h('button', { type: 'button', class: 'button-small', id: 'apple-refresh', text: 'Read again now', disabled: !can('publisher') });
      page.append(heading('App Store Connect', h('p', { class: 'muted', id: 'apple-status', text: status }), refresh));
      refresh.addEventListener('click', async () => {
        refresh.disabled = true;
        try {
          await api('POST', appPath('/app-store-connect/refresh'));
          await render();
          banner('success', 'App Store Connect read again.');
        } catch (error) {
          refresh.disabled = false;
          report(error, 'Not read');
        }
      });
      if (data.readAt === null) return;
      for (const [side, label, id] of [['live', data.live.version ? `Live version ${data.live.version}` : 'The configuration file', 'apple-live'],
        ['draft', data.draft ? `Draft revision ${data.draft.revision}` : null, 'apple-draft']]) {
        if (!label) continue;
        const findings = data[side].findings;
        const errors = findings.filter((finding) => finding.severity === 'error').length;
        page.append(h('section', { class: 'card', id },
          h('div', { class: 'offer-card-head' }, h('h3', { text: label }), badge(errors ? `${errors} error(s)` : 'agrees', errors ? 'error' : 'live')),
          findings.length ? findingsTable(findings, `${id}-findings`) : h('p', { class: 'muted', text: 'Agrees with App Store Connect.' })));
      }
      // Apple's promotional offers as draft offers.
      const template = h('select', { id: 'import-template' }, TEMPLATES.map(([value, text]) => h('option', { value, text })));
      const preview = h('button', { type: 'button', class: 'button-small', id: 'import-preview', text: 'Preview', disabled: !can('editor') || state.catalog !== 'storage' });
      const result = h('div', { id: 'import-result' });
      page.append(h('section', { class: 'card', id: 'apple-import' },
        h('h3', { text: "Import Apple's promotional offers" }),
        h('p', { class: 'help', text: 'Each promotional offer at App Store Connect that the draft does not have becomes a draft offer for its products, with the rule chosen here. Offers already in the draft are never changed.' }),
        h('label', { for: 'import-template', text: 'Rule for the new offers' }), template,
        h('div', { class: 'toolbar' }, preview), result));
      const rule = () => TEMPLATES.find(([value]) => value === template.value)[2];
      preview.addEventListener('click', async () => {
        clearBanners();
        clear(result);
        try {
          const { data: draft, headers } = await api('GET', appPath('/catalog/draft'));
          const { data: imported } = await api('POST', appPath('/app-store-connect/import'), { eligibility: rule() });
          for (const skipped of imported.skipped) {
            result.append(h('p', { class: 'muted skipped', text: `${skipped.offerCode}: ${skipped.reason}` }));
          }
          if (!imported.added.length) {
            result.append(h('p', { id: 'import-nothing', text: 'Nothing to import: the draft has every offer App Store Connect has.' }));
            return;
          }
          for (const offer of imported.diff.offers.filter((change) => change.change === 'added')) {
            result.append(h('section', { class: 'card diff-card diff-added', data: { offerId: offer.id } },
              h('div', { class: 'offer-card-head' }, h('h3', { text: offer.id }), badge('added')), diffView(null, offer.after)));
          }
          const save = h('button', { type: 'button', class: 'button-primary', id: 'import-save', text: `Add ${imported.added.length} offer(s) to the draft` });
          result.append(h('div', { class: 'toolbar' }, save));
          save.addEventListener('click', async () => {
            save.disabled = true;
            try {
              const etag = headers.get('ETag') || `"${draft.revision}"`;
              const { data: saved } = await api('POST', appPath('/app-store-connect/import'), { eligibility: rule(), save: true }, { 'If-Match': etag });
              clear(result);
              banner('success', `Added to the draft, now revision ${saved.draft.revision}. Review it in the editor, then publish.`);
            } catch (error) {
              save.disabled = false;
              report(error, 'Not added');
            }
          });
        } catch (error) {
          report(error, 'No preview');
        }
      });
    };
  }

  /** Before and after as JSON with the changed lines marked (a longest-common-subsequence line diff). */
  function diffView(before, after) {
    const a = before === null || before === undefined ? [] : pretty(before).split('\n');
    const b = after === null || after === undefined ? [] : pretty(after).split('\n');
    const table = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
    for (let i = a.length - 1; i >= 0; i -= 1) {
      for (let j = b.length - 1; j >= 0; j -= 1) {
        table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
      }
    }
    const lines = [];
    let i = 0;
    let j = 0;
    while (i < a.length || j < b.length) {
      if (i < a.length && j < b.length && a[i] === b[j]) {
        lines.push([' ', a[i]]);
        i += 1;
        j += 1;
      } else if (j < b.length && (i === a.length || table[i][j + 1] >= table[i + 1][j])) {
        lines.push(['+', b[j]]);
        j += 1;
      } else {
        lines.push(['-', a[i]]);
        i += 1;
      }
    }
    return h('pre', { class: 'diff' }, lines.map(([mark, line]) => h('span', {
      class: mark === '+' ? 'line-add' : mark === '-' ? 'line-del' : 'line-same',
    }, h('span', { class: 'line-mark', 'aria-hidden': 'true', text: mark }), line + '\n')));
  }

  // MARK: - Versions

  async function pageVersions() {
    const { data } = await api('GET', appPath('/catalog/versions'));
    return (page) => {
      page.append(heading('Versions', h('p', { class: 'muted', text: data.live ? `Version ${data.live} is live` : 'Nothing published yet' })));
      if (!data.versions.length) {
        page.append(h('div', { class: 'card empty', text: 'No version has been published.' }));
        return;
      }
      const body = h('tbody');
      for (const version of data.versions) {
        const live = version.version === data.live;
        const show = h('button', { type: 'button', class: 'button-quiet button-small', text: 'Show offers' });
        const rollback = !live && can('publisher') && state.catalog === 'storage'
          ? h('button', { type: 'button', class: 'button-small rollback', text: `Roll back to ${version.version}`, data: { version: version.version } })
          : null;
        const row = h('tr', { data: { version: version.version }, class: 'version-row' },
          cell('Version', null, h('strong', { text: `v${version.version}` }), ' ', live ? badge('live') : null),
          cell('Message', { class: 'wrap', text: version.message }),
          cell('Author', { text: version.author }),
          cell('Published', null, time(version.publishedAt)),
          cell('', { class: 'actions' }, show, rollback));
        const detail = h('tr', { class: 'detail-row', hidden: true }, h('td', { colspan: 5 }));
        body.append(row, detail);
        show.addEventListener('click', async () => {
          if (!detail.hidden) {
            detail.hidden = true;
            show.textContent = 'Show offers';
            return;
          }
          try {
            const { data: full } = await api('GET', appPath(`/catalog/versions/${version.version}`));
            const cell = detail.firstChild;
            clear(cell);
            cell.append(h('pre', { class: 'json-view', text: pretty(full.document) }));
            detail.hidden = false;
            show.textContent = 'Hide offers';
          } catch (error) {
            report(error, `Could not load version ${version.version}`);
          }
        });
        if (rollback) {
          rollback.addEventListener('click', () => {
            const cell = detail.firstChild;
            clear(cell);
            const message = h('input', { type: 'text', id: 'rollback-message', value: `Roll back to version ${version.version}`, maxlength: 500 });
            const confirmButton = h('button', { type: 'submit', class: 'button-primary', id: 'rollback-confirm', text: `Make version ${version.version}'s offers live` });
            const cancel = h('button', { type: 'button', class: 'button-quiet', text: 'Cancel' });
            const form = h('form', { class: 'rollback-form', novalidate: true },
              h('p', { text: `This publishes a new version holding version ${version.version}'s offers and retention entries. The draft is kept.` }),
              h('label', { for: 'rollback-message', text: 'Message' }), message, h('div', { class: 'toolbar' }, confirmButton, cancel));
            cell.append(form);
            detail.hidden = false;
            message.focus();
            cancel.addEventListener('click', () => { detail.hidden = true; });
            form.addEventListener('submit', async (event) => {
              event.preventDefault();
              confirmButton.disabled = true;
              try {
                const { data: published } = await api('POST', appPath('/catalog/rollback'),
                  { version: version.version, message: message.value.trim() || `Roll back to version ${version.version}`, live: data.live });
                await refreshApps();
                await render();
                banner('success', `Version ${published.version} is live, holding version ${version.version}'s offers.`);
              } catch (error) {
                confirmButton.disabled = false;
                if (error.code === 'version_conflict') {
                  banner('error', 'Someone published meanwhile, so nothing was rolled back. Reload the page to see the versions as they are now.');
                } else {
                  report(error, 'Not rolled back');
                }
              }
            });
          });
        }
      }
      page.append(h('div', { class: 'card table-card' }, h('table', { class: 'table stack', id: 'versions-table' },
        h('thead', null, h('tr', null, ['Version', 'Message', 'Author', 'Published', ''].map((title) => h('th', { scope: 'col', text: title })))),
        body)));
    };
  }

  // MARK: - Simulate

  async function pageSimulate() {
    const { data: versions } = await api('GET', appPath('/catalog/versions'));
    return (page) => {
      page.append(heading('Simulate a customer', h('p', { class: 'muted', text: 'Nothing is signed or counted.' })));
      const input = h('textarea', { id: 'simulate-input', class: 'json token-input', rows: 6, spellcheck: 'false',
        placeholder: 'eyJhbGciOi… (a signed transaction), or {"bundleId": …, "signedTransaction": …}' });
      const against = h('select', { id: 'simulate-against' },
        h('option', { value: 'draft', text: 'The draft' }),
        h('option', { value: 'live', text: versions.live ? `Live (version ${versions.live})` : 'Live', selected: true }),
        versions.versions.map((version) => h('option', { value: String(version.version), text: `Version ${version.version}: ${version.message}` })));
      const at = h('input', { id: 'simulate-at', type: 'datetime-local', step: 60 });
      const button = h('button', { type: 'submit', class: 'button-primary', id: 'simulate-button', text: 'Simulate', disabled: !can('editor') });
      const result = h('div', { id: 'simulate-result' });
      const form = h('form', { class: 'card simulate-form', id: 'simulate-form', novalidate: true },
        h('label', { for: 'simulate-input', text: "Customer's signed data (a JWS from StoreKit) or the app's request JSON" }), input,
        h('div', { class: 'form-row' },
          h('div', null, h('label', { for: 'simulate-against', text: 'Against' }), against),
          h('div', null, h('label', { for: 'simulate-at', text: 'At (optional, your local time)' }), at)),
        !can('editor') ? h('p', { class: 'help', text: 'Simulating needs the editor role.' }) : null,
        h('div', { class: 'toolbar' }, button));
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        clearBanners();
        clear(result);
        const text = input.value.trim();
        if (!text) {
          banner('error', "Paste the customer's signed data or a request first.");
          return;
        }
        const body = { bundleId: state.app, against: /^\d+$/.test(against.value) ? Number(against.value) : against.value };
        if (text.startsWith('{')) {
          try {
            body.request = JSON.parse(text);
          } catch (error) {
            banner('error', `The request is not valid JSON: ${error.message}`);
            return;
          }
        } else {
          body.signedData = text;
        }
        if (at.value) body.at = new Date(at.value).getTime();
        button.disabled = true;
        try {
          const { data } = await api('POST', '/simulate', body);
          result.append(simulation(data));
        } catch (error) {
          report(error, 'Not simulated');
        } finally {
          button.disabled = false;
        }
      });
      page.append(form, result);
    };
  }

  function simulation(data) {
    const against = typeof data.against === 'number' ? `version ${data.against}` : `the ${data.against} catalog`;
    const facts = data.customer
      ? h('details', { class: 'card facts' }, h('summary', null, h('h3', { text: 'What the customer is known as' })),
        h('dl', { class: 'facts-list' }, Object.entries(data.customer).map(([key, value]) => [
          h('dt', { text: key }), h('dd', { text: typeof value === 'string' ? value : JSON.stringify(value) })])))
      : h('p', { class: 'muted', text: 'No verified customer: only rules that need no customer facts can pass.' });
    return h('div', { class: 'simulation' },
      h('p', null, 'Against ', h('strong', { text: against }), ' at ', time(data.at), '.'),
      facts,
      data.offers.map((offer) => h('section', { class: `card sim-offer verdict-${offer.verdict}`, data: { offerId: offer.offerId, verdict: offer.verdict } },
        h('div', { class: 'offer-card-head' },
          h('div', { class: 'title-group' }, h('h3', { text: offer.offerId }), h('span', { class: 'muted small', text: offer.type })),
          badge(offer.verdict.replace('_', ' '), offer.verdict)),
        offer.reasons && offer.reasons.length
          ? h('ul', { class: 'reasons' }, offer.reasons.map((reason) => h('li', { text: reasonText(reason) }))) : null,
        offer.trace ? h('div', { class: 'trace' }, traceNode(offer.trace)) : null)));
  }

  function reasonText(reason) {
    if (typeof reason === 'string') return reason;
    return [reason.rule, reason.code, reason.message].filter(Boolean).join(': ');
  }

  const MARKS = { pass: ['✓', 'passed'], fail: ['✗', 'failed'], unknown: ['?', 'unknown'] };

  /** One node of a decision trace: a collapsible branch (open where it failed) or a leaf. */
  function traceNode(node) {
    const [mark, word] = MARKS[node.result] || ['·', node.result];
    const detail = [];
    if (node.observed) detail.push(`observed ${node.observed}`);
    if (node.expected) detail.push(`expected ${node.expected}`);
    const label = [
      h('span', { class: `mark mark-${node.result}`, title: word, 'aria-label': word, text: mark }),
      h('span', { class: 'trace-text', text: node.rule || node.text }),
      detail.length ? h('span', { class: 'trace-detail', text: detail.join(' · ') }) : null,
    ];
    const children = node.children || [];
    if (!children.length) return h('div', { class: `trace-leaf result-${node.result}`, data: { result: node.result } }, label);
    return h('details', { class: `trace-branch result-${node.result}`, open: true, data: { result: node.result } },
      h('summary', null, label),
      h('div', { class: 'trace-children' }, children.map(traceNode)));
  }

  // MARK: - Charts

  async function pageCharts() {
    const days = state.chartDays || 30;
    const { data } = await api('GET', appPath('/offers'));
    const fetched = (path) => api('GET', appPath(path)).then(({ data: found }) => found, (error) => {
      if (error instanceof SignedOut) throw error;
      return { error };
    });
    const stats = await Promise.all(data.offers.map((offer) =>
      fetched(`/offers/${encodeURIComponent(offer.id)}/stats?days=${days}`)));
    const outcomes = await Promise.all(data.offers.map((offer) =>
      fetched(`/offers/${encodeURIComponent(offer.id)}/outcomes`)));
    const experiments = await Promise.all(data.offers.map((offer) => (offer.experiment
      ? fetched(`/offers/${encodeURIComponent(offer.id)}/experiments/${encodeURIComponent(offer.experiment.id)}`)
      : Promise.resolve(null))));
    const attest = await fetched('/app-attest');
    return (page) => {
      const choose = h('select', { id: 'chart-days' }, [7, 30, 90].map((n) => h('option', { value: String(n), text: `Last ${n} days`, selected: n === days })));
      choose.addEventListener('change', () => {
        state.chartDays = Number(choose.value);
        render();
      });
      page.append(heading('Issued and redeemed', h('label', { class: 'inline-label' }, h('span', { class: 'visually-hidden', text: 'Days' }), choose)));
      if (attest && !attest.error && attest.mode !== 'off') page.append(appAttestCard(attest));
      if (!data.offers.length) {
        page.append(h('div', { class: 'card empty', text: 'No offers yet.' }));
        return;
      }
      const grid = h('div', { class: 'chart-grid' });
      data.offers.forEach((offer, index) => {
        const found = stats[index];
        const card = h('section', { class: 'card chart-card', data: { offerId: offer.id } },
          h('div', { class: 'offer-card-head' }, h('h3', { text: offer.id }), badge(offer.state)));
        if (found.error) {
          card.append(h('p', { class: 'field-error', text: found.error.message }));
        } else {
          card.append(h('p', { class: 'chart-totals' },
            h('span', null, h('span', { class: 'key key-issued' }), `Issued ${count(found.issued)}`),
            h('span', null, h('span', { class: 'key key-redeemed' }), `Redeemed ${count(found.redeemed)}`),
            h('span', { text: `Reserved ${count(found.reserved)}` }),
            h('span', { text: `Remaining ${found.remaining === null || found.remaining === undefined ? 'no limit' : found.remaining}` }),
            h('span', { text: `Conversion ${percent(found.conversion)}` })));
          // Two drawings, one for a wide card and one for a phone's (the style sheet shows one): text in an SVG
          // scales with it, so each is drawn at about the size it is shown.
          card.append(chart(found.daily || [], offer.id, 600, 220, 'chart-wide'),
            chart(found.daily || [], offer.id, 340, 200, 'chart-narrow'));
        }
        const split = outcomes[index];
        if (split && !split.error) card.append(armSplit(split, offer));
        grid.append(card);
        const report = experiments[index];
        if (report) grid.append(experimentCard(report, offer));
      });
      page.append(grid);
    };
  }

  /** Issued and redeemed per day as two lines in an SVG that scales with its card. */
  function chart(daily, label, width, height, kind) {
    const left = 40;
    const right = 12;
    const top = 14;
    const bottom = 30;
    const plotWidth = width - left - right;
    const plotHeight = height - top - bottom;
    const max = Math.max(2, ...daily.map((day) => Math.max(day.issued, day.redeemed)));
    const ceiling = niceCeiling(max);
    const x = (index) => left + (daily.length < 2 ? plotWidth / 2 : (index * plotWidth) / (daily.length - 1));
    const y = (value) => top + plotHeight - (value * plotHeight) / ceiling;
    const grid = [0, ceiling / 2, ceiling].map((value) => [
      s('line', { class: 'grid-line', x1: left, x2: width - right, y1: y(value), y2: y(value) }),
      s('text', { class: 'axis-label', x: left - 6, y: y(value) + 4, 'text-anchor': 'end' }, Number.isInteger(value) ? String(value) : value.toFixed(1)),
    ]);
    const ticks = daily.length ? [0, Math.floor((daily.length - 1) / 2), daily.length - 1] : [];
    const dayLabels = [...new Set(ticks)].map((index) => s('text', {
      class: 'axis-label', x: x(index), y: height - 8,
      'text-anchor': index === 0 ? 'start' : index === daily.length - 1 ? 'end' : 'middle',
    }, daily[index].day.slice(5)));
    const line = (key) => s('polyline', {
      class: `series series-${key}`, points: daily.map((day, index) => `${x(index).toFixed(1)},${y(day[key]).toFixed(1)}`).join(' '),
    });
    const points = daily.map((day, index) => s('g', { class: 'point' },
      s('title', null, `${day.day}: ${day.issued} issued, ${day.redeemed} redeemed`),
      s('rect', { class: 'hover-band', x: x(index) - plotWidth / Math.max(2, daily.length) / 2, y: top, width: plotWidth / Math.max(2, daily.length), height: plotHeight }),
      day.issued ? s('circle', { class: 'dot dot-issued', cx: x(index), cy: y(day.issued), r: 3 }) : null,
      day.redeemed ? s('circle', { class: 'dot dot-redeemed', cx: x(index), cy: y(day.redeemed), r: 3 }) : null));
    const total = (key) => daily.reduce((sum, day) => sum + day[key], 0);
    return s('svg', {
      class: `chart ${kind}`, viewBox: `0 0 ${width} ${height}`, role: 'img', preserveAspectRatio: 'xMidYMid meet',
      'aria-label': `${label}: ${total('issued')} issued and ${total('redeemed')} redeemed over ${daily.length} days`,
    }, grid, dayLabels, line('issued'), line('redeemed'), points);
  }

  // MARK: - App Attest

  /**
   * The app's App Attest: the share of its requests that carried a valid assertion (what tells when `enforce` is
   * safe), why the others did not, and its keys. Counted by this process since it started; the metric
   * offer_signer_app_attest_requests_total summed over replicas is the whole fleet's.
   */
  function appAttestCard(attest) {
    const requests = attest.requests;
    const share = attest.attestedShare;
    const card = h('section', { class: 'card app-attest-card', id: 'app-attest-card', data: { mode: attest.mode } },
      h('div', { class: 'offer-card-head' }, h('h3', { text: 'App Attest' }), badge(attest.mode)));
    card.append(h('p', { class: 'app-attest-share' },
      h('strong', { id: 'app-attest-share', text: share === null ? 'No requests yet' : `${localRate(share)} attested` }),
      share === null ? null : ` · ${localCount(requests.valid)} of ${localCount(requests.total)} requests carried a valid assertion`));
    const width = share === null ? 0 : share * 100;
    card.append(s('svg', {
      class: 'share-bar', viewBox: '0 0 100 4', preserveAspectRatio: 'none', role: 'img',
      'aria-label': share === null ? 'no requests yet' : `${localRate(share)} of requests attested`,
    }, s('rect', { class: 'bar-track', width: 100, height: 4 }), s('rect', { class: 'share-fill', width, height: 4 })));
    const reasons = Object.entries(requests.refused || {}).sort((a, b) => b[1] - a[1]);
    const facts = h('dl', { class: 'experiment-facts' },
      h('dt', { text: 'Without assertion' }), h('dd', { id: 'app-attest-missing', text: localCount(requests.missing) }),
      h('dt', { text: attest.mode === 'enforce' ? 'Refused' : 'Would be refused' }),
      h('dd', { id: 'app-attest-refused', text: reasons.length ? reasons.map(([reason, n]) => `${reason} ${localCount(n)}`).join(' · ') : '0' }),
      h('dt', { text: 'Keys' }), h('dd', { id: 'app-attest-keys', text: `${localCount(attest.keys.inForce)} in force · ${localCount(attest.keys.revoked)} revoked` }),
      h('dt', { text: 'Counted since' }), h('dd', { text: `${new Date(attest.since).toLocaleString()} (this replica)` }));
    card.append(facts);
    if (attest.mode === 'report') {
      card.append(h('p', { class: 'muted', text: 'Report mode: every request is answered; enforce refuses those without a valid assertion. '
        + 'Switch when the share stays near 100% across a release, the rest being old app versions you accept to refuse.' }));
    }
    return card;
  }

  // MARK: - Outcomes and experiments

  /** Numbers in the reader's locale. */
  const numberFormat = new Intl.NumberFormat(undefined);
  const rateFormat = new Intl.NumberFormat(undefined, { style: 'percent', minimumFractionDigits: 1, maximumFractionDigits: 1 });
  const pointsFormat = new Intl.NumberFormat(undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1, signDisplay: 'exceptZero' });
  const liftFormat = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 0, signDisplay: 'exceptZero' });

  function localCount(value) {
    return value === null || value === undefined ? '—' : numberFormat.format(value);
  }

  function localRate(value) {
    return value === null || value === undefined ? '—' : rateFormat.format(value);
  }

  function localPoints(value) {
    return value === null || value === undefined ? '—' : `${pointsFormat.format(value * 100)} pt`;
  }

  /** Milliunits of a currency per exposure, in the reader's locale and the currency's own format. */
  function perExposure(revenue, exposures) {
    if (!exposures) return '—';
    try {
      return new Intl.NumberFormat(undefined, { style: 'currency', currency: revenue.currency }).format(revenue.milliunits / 1000 / exposures);
    } catch (error) {
      return `${numberFormat.format(revenue.milliunits / 1000 / exposures)} ${revenue.currency}`;
    }
  }

  const ARMS = ['treatment', 'holdout'];
  const ARM_NAMES = { treatment: 'Treatment (shown the offer)', holdout: 'Holdout (kept from it)' };
  const STEPS = [
    ['signaturesIssued', 'Signed'], ['redeemed', 'Redeemed'], ['converted', 'Converted'], ['retained', 'Retained'],
  ];

  /**
   * The arms of the offer's current period (its experiment's, else outside any) side by side: of the customers
   * exposed, the share signed, redeemed, converted and retained, one bar per arm (the holdout's hatched, so the arms
   * differ by more than colour), each with its count.
   */
  function armSplit(outcomes, offer) {
    const period = offer.experiment ? offer.experiment.id : '';
    const arms = Object.fromEntries(ARMS.map((arm) => [arm, (outcomes.periods || []).find((row) => row.experimentId === period && row.arm === arm)]));
    const section = h('div', { class: 'arm-split', data: { period } });
    section.append(h('h4', { text: offer.experiment ? `Arms of experiment ${offer.experiment.id}` : 'Arms' }));
    if (!arms.treatment && !arms.holdout) {
      section.append(h('p', { class: 'muted', text: 'No customer exposed yet.' }));
      return section;
    }
    section.append(h('p', { class: 'chart-totals' }, ARMS.map((arm) => h('span', null,
      h('span', { class: `key key-${arm}` }), `${ARM_NAMES[arm]}: ${localCount(arms[arm] ? arms[arm].exposures : 0)} exposed`))));
    section.append(splitChart(arms, 600, 'chart-wide'), splitChart(arms, 340, 'chart-narrow'));
    return section;
  }

  /** `armSplit`'s bars, drawn at about the width they are shown. */
  function splitChart(arms, width, kind) {
    const rowHeight = 34;
    const left = width > 400 ? 92 : 76;
    const right = width > 400 ? 150 : 104;
    const top = 6;
    const height = top + STEPS.length * rowHeight + 8;
    const plot = width - left - right;
    const rows = STEPS.map(([key, name], index) => {
      const y = top + index * rowHeight;
      return s('g', { class: 'split-row', data: { step: key } },
        s('text', { class: 'axis-label', x: left - 8, y: y + 19, 'text-anchor': 'end' }, name),
        ARMS.map((arm, which) => {
          const row = arms[arm];
          const exposed = row ? row.exposures : 0;
          const value = row ? row[key] : 0;
          const share = exposed ? value / exposed : 0;
          const barY = y + 3 + which * 14;
          return s('g', { class: 'split-bar', data: { arm } },
            s('title', null, `${ARM_NAMES[arm]}: ${localCount(value)} of ${localCount(exposed)} (${exposed ? localRate(share) : '—'})`),
            s('rect', { class: 'bar-track', x: left, y: barY, width: plot, height: 11 }),
            s('rect', {
              class: `bar bar-${arm}`, x: left, y: barY, width: Math.max(share * plot, value ? 1.5 : 0), height: 11,
              fill: arm === 'holdout' ? `url(#hatch-holdout-${kind})` : null,
            }),
            s('text', { class: 'axis-label bar-label', x: left + plot + 8, y: barY + 10 }, `${exposed ? localRate(share) : '—'} · ${localCount(value)}`));
        }));
    });
    return s('svg', {
      class: `chart split-chart ${kind}`, viewBox: `0 0 ${width} ${height}`, role: 'img', preserveAspectRatio: 'xMidYMid meet',
      'aria-label': ARMS.map((arm) => `${arm}: ${arms[arm] ? STEPS.map(([key, name]) => `${name.toLowerCase()} ${arms[arm][key]}`).join(', ') : 'none'} of ${arms[arm] ? arms[arm].exposures : 0} exposed`).join('; '),
    }, hatchPattern(kind), rows);
  }

  /** The holdout's hatching: a pattern of diagonal lines in its colour (one per drawing: ids are the page's). */
  function hatchPattern(kind) {
    return s('defs', null, s('pattern', { id: `hatch-holdout-${kind}`, width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
      s('rect', { class: 'hatch-ground', width: 6, height: 6 }),
      s('line', { class: 'hatch-line', x1: 0, y1: 0, x2: 0, y2: 6 })));
  }

  /**
   * An experiment's card: each arm's rate on the metric with its 95% interval as an error bar, the difference with
   * its interval against zero, the sample size against the plan, the verdict (which waits for the plan), and the
   * revenue per exposure in each currency.
   */
  function experimentCard(report, offer) {
    const card = h('section', { class: 'card experiment-card', data: { offerId: offer.id, experimentId: offer.experiment.id } });
    if (report.error) {
      card.append(h('h3', { text: `Experiment ${offer.experiment.id}` }), h('p', { class: 'field-error', text: report.error.message }));
      return card;
    }
    const experiment = report.experiment;
    const verdictKind = { 'treatment better': 'good', 'holdout better': 'bad', 'no difference detected yet': 'info', collecting: 'warn' }[report.verdict] || 'info';
    card.append(h('div', { class: 'offer-card-head' },
      h('h3', { text: `Experiment ${experiment.id}` }),
      h('span', { class: `badge badge-${verdictKind} verdict`, data: { verdict: report.verdict }, text: report.verdict })));
    const metric = experiment.metric === 'retainedAfterPeriod' ? 'retained after the offer period' : 'converted';
    card.append(h('p', { class: 'muted experiment-plan' },
      `${offer.id} · ${experiment.running ? 'running' : 'not running'} · holdout ${numberFormat.format(experiment.holdoutPercent)}% · `
      + `metric: ${metric} · minimum detectable effect ${numberFormat.format(experiment.minimumDetectableEffect)} pt`));
    card.append(intervalChart(report, 600, 'chart-wide'), intervalChart(report, 340, 'chart-narrow'));
    const facts = h('dl', { class: 'experiment-facts' });
    const add = (name, value, key) => facts.append(h('dt', { text: name }), h('dd', { data: { fact: key }, text: value }));
    for (const arm of ARMS) {
      const row = report[arm];
      add(ARM_NAMES[arm], `${localCount(row.successes)} of ${localCount(row.exposures)} · ${localRate(row.rate)}`
        + (row.interval ? ` (95%: ${localRate(row.interval.lower)} to ${localRate(row.interval.upper)})` : ''), arm);
    }
    add('Difference', report.difference === null ? '—'
      : `${localPoints(report.difference)} (95%: ${localPoints(report.differenceInterval.lower)} to ${localPoints(report.differenceInterval.upper)})`
        + (report.relativeLift === null ? '' : ` · lift ${liftFormat.format(report.relativeLift)}`), 'difference');
    add('Sample size', report.requiredPerArm === null
      ? 'planned once the holdout has a rate'
      : `${localCount(report.requiredPerArm)} per arm planned · ${report.stillNeeded ? `${localCount(report.stillNeeded)} still to come` : 'reached'}`, 'sample');
    const currencies = [...new Set(ARMS.flatMap((arm) => (report[arm].revenue || []).map((item) => item.currency)))].sort();
    for (const currency of currencies) {
      add(`Revenue per exposure (${currency})`, ARMS.map((arm) => {
        const found = (report[arm].revenue || []).find((item) => item.currency === currency) || { currency, milliunits: 0 };
        return `${arm} ${perExposure(found, report[arm].exposures)}`;
      }).join(' · '), `revenue-${currency}`);
    }
    card.append(facts);
    if (report.verdict === 'collecting') {
      card.append(h('p', { class: 'muted small', text: 'The verdict waits for the planned sample size in both arms: looking early and stopping on a good-looking day finds effects that are not there.' }));
    }
    return card;
  }

  /** The arms' rates with their 95% intervals as error bars, and the difference's interval against zero. */
  function intervalChart(report, width, kind) {
    const left = width > 400 ? 92 : 78;
    const right = 16;
    const plot = width - left - right;
    const rowHeight = 30;
    const top = 10;
    const rates = ARMS.flatMap((arm) => (report[arm].interval ? [report[arm].interval.upper] : []));
    const ceiling = Math.min(1, Math.max(0.05, ...rates) * 1.1);
    const x = (value) => left + (value / ceiling) * plot;
    const rows = ARMS.map((arm, index) => {
      const row = report[arm];
      const y = top + 12 + index * rowHeight;
      if (!row.interval || row.rate === null) {
        return s('text', { class: 'axis-label', x: left, y: y + 4 }, `${arm}: no exposure yet`);
      }
      return s('g', { class: `interval interval-${arm}`, data: { arm } },
        s('title', null, `${ARM_NAMES[arm]}: ${localRate(row.rate)}, 95% interval ${localRate(row.interval.lower)} to ${localRate(row.interval.upper)}`),
        s('text', { class: 'axis-label', x: left - 8, y: y + 4, 'text-anchor': 'end' }, arm),
        s('line', { class: `error-bar error-bar-${arm}`, x1: x(row.interval.lower), x2: x(row.interval.upper), y1: y, y2: y }),
        s('line', { class: `error-bar error-bar-${arm}`, x1: x(row.interval.lower), x2: x(row.interval.lower), y1: y - 6, y2: y + 6 }),
        s('line', { class: `error-bar error-bar-${arm}`, x1: x(row.interval.upper), x2: x(row.interval.upper), y1: y - 6, y2: y + 6 }),
        arm === 'treatment'
          ? s('circle', { class: `estimate estimate-${arm}`, cx: x(row.rate), cy: y, r: 5 })
          : s('rect', { class: `estimate estimate-${arm}`, x: x(row.rate) - 5, y: y - 5, width: 10, height: 10 }));
    });
    const axisY = top + 12 + ARMS.length * rowHeight - 8;
    const axis = [0, ceiling / 2, ceiling].map((value) => s('text', { class: 'axis-label', x: x(value), y: axisY + 14, 'text-anchor': value === 0 ? 'start' : value === ceiling ? 'end' : 'middle' }, rateFormat.format(value)));
    // The difference, on its own axis centred on zero.
    const diffTop = axisY + 34;
    const interval = report.differenceInterval;
    const reach = interval ? Math.max(0.02, Math.abs(interval.lower), Math.abs(interval.upper)) * 1.15 : 0.1;
    const dx = (value) => left + plot / 2 + (value / reach) * (plot / 2);
    const difference = [
      s('text', { class: 'axis-label', x: left - 8, y: diffTop + 4, 'text-anchor': 'end' }, 'difference'),
      s('line', { class: 'zero-line', x1: dx(0), x2: dx(0), y1: diffTop - 12, y2: diffTop + 12 }),
      interval ? s('g', { class: 'interval interval-difference' },
        s('title', null, `Difference ${localPoints(report.difference)}, 95% interval ${localPoints(interval.lower)} to ${localPoints(interval.upper)}`),
        s('line', { class: 'error-bar error-bar-difference', x1: dx(interval.lower), x2: dx(interval.upper), y1: diffTop, y2: diffTop }),
        s('line', { class: 'error-bar error-bar-difference', x1: dx(interval.lower), x2: dx(interval.lower), y1: diffTop - 6, y2: diffTop + 6 }),
        s('line', { class: 'error-bar error-bar-difference', x1: dx(interval.upper), x2: dx(interval.upper), y1: diffTop - 6, y2: diffTop + 6 }),
        s('path', { class: 'estimate estimate-difference', d: `M ${dx(report.difference)} ${diffTop - 6} l 6 6 l -6 6 l -6 -6 z` }))
        : s('text', { class: 'axis-label', x: dx(0) + 6, y: diffTop + 4 }, 'not yet'),
      s('text', { class: 'axis-label', x: dx(-reach), y: diffTop + 26, 'text-anchor': 'start' }, localPoints(-reach)),
      s('text', { class: 'axis-label', x: dx(0), y: diffTop + 26, 'text-anchor': 'middle' }, '0'),
      s('text', { class: 'axis-label', x: dx(reach), y: diffTop + 26, 'text-anchor': 'end' }, localPoints(reach)),
    ];
    const height = diffTop + 34;
    return s('svg', {
      class: `chart interval-chart ${kind}`, viewBox: `0 0 ${width} ${height}`, role: 'img', preserveAspectRatio: 'xMidYMid meet',
      'aria-label': `Experiment ${report.experiment.id}: treatment ${localRate(report.treatment.rate)}, holdout ${localRate(report.holdout.rate)}, difference ${localPoints(report.difference)}; verdict ${report.verdict}`,
    }, rows, axis, difference);
  }

  function niceCeiling(value) {
    const power = 10 ** Math.floor(Math.log10(value));
    for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
    return 10 * power;
  }

  // MARK: - Audit log

  const AUDIT_PAGE = 25;

  async function pageAudit(before) {
    const query = before ? `?before=${before}&limit=${AUDIT_PAGE}` : `?limit=${AUDIT_PAGE}`;
    const { data } = await api('GET', `/audit${query}`);
    return (page) => buildAudit(page, data, before || null);
  }

  function buildAudit(page, data, before) {
    const head = data.head || { count: 0, hash: '' };
    const verifyButton = h('button', { type: 'button', id: 'verify-audit', text: 'Verify the chain' });
    const verdict = h('div', { id: 'verify-result' });
    page.append(heading('Audit log', h('p', { class: 'muted' }, `${head.count} entries · head `, hashView(head.hash))));
    page.append(h('div', { class: 'toolbar' }, verifyButton), verdict);
    verifyButton.addEventListener('click', async () => {
      verifyButton.disabled = true;
      clear(verdict);
      try {
        const { data: result } = await api('GET', '/audit/verify');
        verdict.append(h('div', { class: `banner ${result.valid ? 'banner-success' : 'banner-error'}`, role: 'status', data: { valid: result.valid } },
          h('strong', { text: result.valid ? '✓ The audit chain verifies.' : '✗ The audit chain does not verify.' }),
          ` ${result.head.count} entries, head `, hashView(result.head.hash),
          result.published ? [`; published head: ${result.published.count} entries, `, hashView(result.published.hash)] : null,
          result.problems && result.problems.length
            ? h('ul', null, result.problems.map((problem) => h('li', { text: typeof problem === 'string' ? problem : JSON.stringify(problem) }))) : null));
      } catch (error) {
        report(error, 'Could not verify');
      } finally {
        verifyButton.disabled = false;
      }
    });
    if (!data.entries.length) {
      page.append(h('div', { class: 'card empty', text: 'No entries.' }));
      return;
    }
    const rows = data.entries.map((entry) => h('tr', { class: 'audit-row', data: { sequence: entry.sequence, action: entry.action } },
      cell('#', { text: entry.sequence }),
      cell('When', null, time(entry.at)),
      cell('Who', { class: 'nowrap', text: entry.actor }),
      cell('Action', null, h('code', { text: entry.action })),
      cell('Subject', { class: 'wrap', text: entry.subject || '' }),
      cell('Change', { class: 'wrap wide' }, entry.before === null && entry.after === null
        ? h('span', { class: 'muted', text: '—' })
        : h('details', { class: 'change' }, h('summary', { text: 'Before and after' }), diffView(entry.before, entry.after))),
      cell('Request', { class: 'nowrap small' }, h('code', { text: entry.requestId || '' }))));
    page.append(h('div', { class: 'card table-card' }, h('table', { class: 'table stack', id: 'audit-table' },
      h('thead', null, h('tr', null, ['#', 'When', 'Who', 'Action', 'Subject', 'Change', 'Request'].map((title) => h('th', { scope: 'col', text: title })))),
      h('tbody', null, rows))));
    const oldest = data.entries[data.entries.length - 1].sequence;
    const pager = h('div', { class: 'toolbar pager' });
    if (before) {
      const newest = h('button', { type: 'button', id: 'audit-newest', text: '← Newest' });
      newest.addEventListener('click', () => render());
      pager.append(newest);
    }
    if (oldest > 1 && data.entries.length >= AUDIT_PAGE) {
      const older = h('button', { type: 'button', id: 'audit-older', text: 'Older →' });
      older.addEventListener('click', async () => {
        const id = ++state.renderId;
        try {
          const build = await pageAudit(oldest);
          if (id !== state.renderId) return;
          const fresh = h('div', { class: 'page', id: 'page-audit' }, h('div', { id: 'banners' }));
          clear(main);
          main.append(fresh);
          build(fresh);
          fresh.dataset.ready = 'true';
        } catch (error) {
          report(error);
        }
      });
      pager.append(older);
    }
    page.append(pager);
  }

  start();
})();
