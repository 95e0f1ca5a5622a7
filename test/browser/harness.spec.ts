/**
 * The browser harness's own test (test/support/browser.ts), against a tiny server-rendered form
 * served by node:http on a free port: a page loads, a form is submitted by a click, the result
 * page's text is read; with the page's scripts disabled the server's HTML still renders and the
 * form still posts.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'puppeteer-core';
import {
  BROWSER_HOOK_TIMEOUT_MS,
  clickAndWait,
  describeBrowser,
  launchBrowser,
  visibleText,
  withPage,
} from '../support/browser';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function html(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;
}

/** GET / serves the form; POST /greet (urlencoded) answers with a result page. */
const FORM_PAGE = html(
  'form',
  '<p id="origin">rendered by the server</p>' +
    '<div id="box">shown<span style="display:none"> not shown</span></div>' +
    '<p id="hidden" style="display:none">not shown</p>' +
    '<p id="invisible" style="visibility:hidden">not shown</p>' +
    '<form method="post" action="/greet">' +
    '<input id="name" name="name" type="text">' +
    '<button id="send" type="submit">Send</button>' +
    '</form>' +
    // Only a page with scripts enabled replaces the server's text.
    "<script>document.getElementById('origin').textContent = 'rewritten by a script';</script>",
);

interface Received {
  method: string;
  url: string;
  contentType: string | undefined;
}

function startServer(received: Received[]): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    // The browser may ask for a favicon on its own: not a request of the page's.
    if (req.url !== '/favicon.ico') {
      received.push({
        method: req.method ?? '',
        url: req.url ?? '',
        contentType: req.headers['content-type'],
      });
    }
    if (req.method === 'GET' && req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(FORM_PAGE);
      return;
    }
    if (req.method === 'POST' && req.url === '/greet') {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const name = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('name') ?? '';
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(html('result', `<p id="result">Hello, ${escapeHtml(name)}!</p>`));
      });
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

describeBrowser('browser harness', () => {
  const received: Received[] = [];
  let server: http.Server;
  let base: string;
  let browser: Browser | undefined;

  beforeAll(async () => {
    server = await startServer(received);
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchBrowser();
  }, BROWSER_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    server.closeAllConnections();
    await new Promise<void>((resolve, reject) =>
      server.close((error) => (error ? reject(error) : resolve())),
    );
  }, BROWSER_HOOK_TIMEOUT_MS);

  beforeEach(() => {
    received.length = 0;
  });

  it('loads a page, submits its form by a click and reads the result', async () => {
    await withPage(browser!, async (page) => {
      const loaded = await page.goto(`${base}/`, { waitUntil: 'load' });
      expect(loaded?.status()).toBe(200);
      expect(await visibleText(page, '#origin')).toBe('rewritten by a script');

      await page.type('#name', 'Ada & <Bob>');
      const response = await clickAndWait(page, '#send');

      expect(response?.status()).toBe(200);
      expect(page.url()).toBe(`${base}/greet`);
      expect(await visibleText(page, '#result')).toBe('Hello, Ada & <Bob>!');
      expect(received.at(-1)).toEqual({
        method: 'POST',
        url: '/greet',
        contentType: 'application/x-www-form-urlencoded',
      });
    });
  });

  it('reads only rendered text', async () => {
    await withPage(browser!, async (page) => {
      await page.goto(`${base}/`, { waitUntil: 'load' });
      expect(await visibleText(page, '#box')).toBe('shown');
      expect(await visibleText(page, '#hidden')).toBe('');
      expect(await visibleText(page, '#invisible')).toBe('');
      await expect(visibleText(page, '#missing')).rejects.toThrow('#missing');
    });
  });

  it('renders the server HTML and posts the form with the page scripts disabled', async () => {
    await withPage(browser!, async (page) => {
      await page.setJavaScriptEnabled(false);
      await page.goto(`${base}/`, { waitUntil: 'load' });
      expect(await visibleText(page, '#origin')).toBe('rendered by the server');

      await page.type('#name', 'no script');
      const response = await clickAndWait(page, '#send');

      expect(response?.status()).toBe(200);
      expect(await visibleText(page, '#result')).toBe('Hello, no script!');
      expect(received.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /', 'POST /greet']);
    });
  });

  it('closes the page withPage opened, also when its callback throws', async () => {
    const before = (await browser!.pages()).length;
    await expect(
      withPage(browser!, async (page) => {
        await page.goto(`${base}/`, { waitUntil: 'load' });
        throw new Error('callback failed');
      }),
    ).rejects.toThrow('callback failed');
    expect((await browser!.pages()).length).toBe(before);
  });
});
