import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { gqlData } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';

/** Debian's Chromium (`apt-get install chromium`, .ci/run does). */
const CHROMIUM = process.env.KEELSON_TEST_CHROMIUM ?? '/usr/bin/chromium';
/**
 * The picture of GraphiQL streaming, taken by every run: to a temp path, so `npm test` leaves the tree
 * as it found it; `npm run docs:pictures` points KEELSON_PICTURES_DIR at docs/ to refresh the README's.
 */
const SCREENSHOT = join(process.env.KEELSON_PICTURES_DIR || join(tmpdir(), `keelson-pictures-${process.pid}`), 'graphiql.png');

const queryEditor = '.graphiql-query-editor .monaco-editor';
/** Waits until the response editor shows text matching `pattern`. */
const responseShows = (page: Page, pattern: RegExp) => page.locator('.graphiql-response .view-lines').filter({ hasText: pattern }).waitFor({ timeout: 20_000 });

/** Replaces the operation in the query editor by typing it, as a person would. */
async function typeOperation(page: Page, text: string): Promise<void> {
  await page.locator(queryEditor).click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  // Monaco closes brackets and quotes as one types: type the opening halves only, it adds the rest.
  await page.keyboard.type(text);
  // Close the completion list typing opened (it would cover the toolbar). It opens asynchronously,
  // so press Escape until it is closed and stays closed.
  for (let closedFor = 0, tries = 0; closedFor < 2 && tries < 20; tries++) {
    await page.keyboard.press('Escape');
    await page.waitForTimeout(150);
    closedFor = (await page.locator('.suggest-widget.visible').count()) === 0 ? closedFor + 1 : 0;
  }
}

describe('GraphiQL at the gateway, in a real headless Chromium', () => {
  let mesh: TestMesh;
  let browser: Browser;
  let page: Page;
  const violations: string[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    mesh = await startTestMesh();
    await gqlData(mesh.gatewayUrl, 'mutation { createProject(input: { name: "harbor" }) { id } }');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1440, height: 860 } });
    // Injected by the browser, not the page: sees what the page's CSP blocks.
    await page.addInitScript({
      content: "document.addEventListener('securitypolicyviolation', (e) => (window.violations ??= []).push(e.effectiveDirective + ' ' + e.blockedURI));",
    });
    page.on('pageerror', (err) => pageErrors.push(err.message));
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await mesh?.teardown();
  });
  afterEach(async () => {
    violations.push(...(await page.evaluate<string[]>('window.violations ?? []')));
  });

  it('loads from the start-up URL under a strict CSP, nothing from elsewhere, and drops the token from the address bar', async () => {
    const root = mesh.gatewayUrl.replace(/\/graphql$/, '/');
    const requested: string[] = [];
    page.on('request', (req) => requested.push(req.url()));
    const res = await page.goto(`${root}#token=${mesh.adminToken!.token}`);
    const csp = res!.headers()['content-security-policy'];
    expect(csp).toMatch(/default-src 'none'; script-src 'self';/);
    expect(csp).not.toMatch(/script-src[^;]*'unsafe-(inline|eval)'/);

    await page.locator(queryEditor).waitFor({ timeout: 30_000 });
    // The schema arrived through the gateway with the token: the docs list the root types.
    await page.getByRole('button', { name: /show documentation explorer/i }).click();
    await page.getByText('Query', { exact: true }).first().waitFor({ timeout: 20_000 });
    expect(page.url()).toBe(root);
    expect(requested.filter((url) => !url.startsWith(root.replace(/\/$/, '')))).toEqual([]);
  });

  it('offers a field of the live schema as one types', async () => {
    await typeOperation(page, '{ harnes');
    await page.keyboard.press('Control+Space');
    const suggestion = page.locator('.suggest-widget .monaco-list-row', { hasText: 'harnesses' });
    await suggestion.first().waitFor({ timeout: 20_000 });
    // Taking it completes the field in the editor.
    await page.keyboard.press('Enter');
    await page.locator(queryEditor).filter({ hasText: /harnesses/ }).waitFor({ timeout: 5_000 });
  });

  it('runs a query with the token the URL carried', async () => {
    await typeOperation(page, '{ projects { name headCommit');
    await page.locator('.graphiql-execute-button').click();
    await responseShows(page, /"name":\s*"harbor"/);
  });

  it('keeps a history of what ran: the History plugin sits beside the explorer', async () => {
    await page.getByRole('button', { name: /show history/i }).click();
    await page.locator('.graphiql-history-item', { hasText: /projects/ }).first().waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: /hide history/i }).click();
  });

  it('streams a subscription over graphql-ws and shows a live event', async () => {
    await typeOperation(page, 'subscription { projectEvents(after: "0") { cursor type at project { name ');
    await page.getByRole('button', { name: /prettify query/i }).click();
    await page.locator('.graphiql-execute-button').click();
    await responseShows(page, /PROJECT_CREATED/);
    // A live one, made while the page listens.
    await gqlData(mesh.gatewayUrl, 'mutation { createProject(input: { name: "lighthouse" }) { id } }');
    await responseShows(page, /"name":\s*"lighthouse"/);
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });
    // A PNG of the page as it streams (the README's picture when taken into docs/).
    expect(readFileSync(SCREENSHOT).subarray(1, 4).toString()).toBe('PNG');
  });

  it('blocked nothing the page needs and threw nothing', () => {
    expect(violations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
