import { silentLogger } from '@keelson/service';
import WebSocket from 'ws';
import { startGateway } from '../src';
import { startSubgraphs } from './fixtures';

it('explorer script works against the gateway', async () => {
  const sg = await startSubgraphs();
  const gw = await startGateway({ supergraphSdl: sg.supergraphSdl, port: 0, subgraphUrls: { catalog: sg.catalog.url, reviews: sg.reviews.url }, log: silentLogger() });
  const html = await (await fetch(gw.url.replace('/graphql', '/'))).text();
  const script = /<script>([\s\S]*)<\/script>/.exec(html)![1]!;
  const els: Record<string, any> = {};
  const el = (id: string) => (els[id] ??= { id, value: '', textContent: '', hidden: true, children: [] as any[], append(...c: any[]) { this.children.push(...c); }, focus() {} });
  const doc = { getElementById: el, createElement: (t: string) => ({ tag: t, textContent: '', children: [] as any[], append(...c: any[]) { this.children.push(...c); } }), addEventListener() {} };
  const fn = new Function('document', 'location', 'fetch', 'WebSocket', 'performance', script);
  fn(doc, new URL(gw.url.replace('/graphql', '/')), fetch, WebSocket, performance);
  await new Promise((r) => setTimeout(r, 300));
  console.log('roots', JSON.stringify(el('roots').children.map((c: any) => c.textContent || c.children.map((li: any) => li.children[0].textContent))));
  // click the first subscription field
  const subList = el('roots').children[5];
  subList.children[0].children[0].onclick();
  console.log('skeleton:\n' + el('query').value);
  el('query').value = '{ products { name } }';
  await el('run').onclick();
  console.log('query result', el('result').textContent.replace(/\s+/g, ' '), '|', el('status').textContent);
  el('query').value = 'subscription { reviewAdded { id body product { name } } }';
  el('run').onclick();
  const ch = await sg.feed.channel(1);
  ch.push({ id: 'r7', body: 'hi', productId: 'p1' });
  await new Promise((r) => setTimeout(r, 300));
  console.log('sub result', el('result').textContent.replace(/\s+/g, ' '), '|', el('status').textContent, 'stop hidden', el('stop').hidden);
  el('stop').onclick();
  await new Promise((r) => setTimeout(r, 200));
  console.log('after stop', el('status').textContent, ch.returnCalls);
  await gw.stop(); await sg.stop();
});
