// block-user-agents / block-referers as compiled for the request path: a User-Agent in, blocked or
// not out, for each way an entry is compiled (exact set, plain words, one RE2 alternation, the
// one-by-one fallback when the union does not compile).
import { IncomingMessage } from 'node:http';
import t from 'tap';
import { blockedByHeaders, compileHeaderBlocks } from '../../lib/dataplane/access/header-blocks.ts';
import { DEFAULT_GLOBAL_CONFIG, type HeaderBlock } from '../../lib/model/configmap/global-config.ts';
import { parseHeaderBlock } from '../../lib/model/configmap/header-blocks.ts';

const DEFAULT_ACCESS = DEFAULT_GLOBAL_CONFIG.access;

const entries = (...list: string[]): HeaderBlock[] =>
  list.map((entry) => {
    const block = parseHeaderBlock(entry);
    if (typeof block === 'string') throw new Error(block);
    return block;
  });

function head(headers: Record<string, string>): IncomingMessage {
  const req = new IncomingMessage({ remoteAddress: '10.0.0.1' } as unknown as IncomingMessage['socket']);
  req.headers = headers;
  return req;
}

const rows: Array<{ list: string[]; agent: string | undefined; blocked: boolean; name: string }> = [
  { name: 'exact, another case', list: ['curl/7.68.0'], agent: 'CURL/7.68.0', blocked: true },
  { name: 'exact is the whole value', list: ['curl/7.68.0'], agent: 'curl/7.68.0 x', blocked: false },
  { name: '~* word, any case', list: ['~*bot'], agent: 'GoogleBOT/2.1', blocked: true },
  { name: '~ word keeps case', list: ['~Bot'], agent: 'googlebot', blocked: false },
  { name: '~ word', list: ['~Bot'], agent: 'SomeBot', blocked: true },
  { name: 'anchored regex', list: ['~^Wget'], agent: 'Wget/1.21', blocked: true },
  { name: 'anchored regex, elsewhere', list: ['~^Wget'], agent: 'x Wget', blocked: false },
  {
    name: 'case-insensitive regex',
    list: ['~*^python-(requests|urllib)'],
    agent: 'Python-URLLIB/3',
    blocked: true,
  },
  { name: 'union of both kinds', list: ['~^A.c$', '~*^z+$'], agent: 'ZZZ', blocked: true },
  { name: 'union: case kept where asked', list: ['~^A.c$', '~*^z+$'], agent: 'abc', blocked: false },
  { name: 'a \\Q left open: tested alone', list: ['~a\\Q(b', '~^x$'], agent: 'za(b', blocked: true },
  {
    name: 'a \\Q left open: the other entry still applies',
    list: ['~a\\Q(b', '~^x$'],
    agent: 'x',
    blocked: true,
  },
  { name: 'a non-ASCII word goes to RE2', list: ['~*ÉCOLE'], agent: 'école-bot', blocked: true },
  { name: 'no header: never by a regex', list: ['~^$', '~*.*'], agent: undefined, blocked: false },
  { name: 'nothing matches', list: ['~*bot', 'curl', '~^Wget'], agent: 'Mozilla/5.0', blocked: false },
];

t.test('User-Agent against a compiled list', async (t) => {
  for (const row of rows) {
    const blocks = compileHeaderBlocks({ ...DEFAULT_ACCESS, blockUserAgents: entries(...row.list) });
    t.not(blocks, null);
    const headers: Record<string, string> = row.agent === undefined ? {} : { 'user-agent': row.agent };
    t.equal(blockedByHeaders(blocks!, head(headers)), row.blocked, row.name);
  }
});

t.test('no list: nothing compiled', async (t) => {
  const none = compileHeaderBlocks(DEFAULT_ACCESS);
  t.equal(none, null);
});
