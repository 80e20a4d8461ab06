// worker-processes → a thread count: a number as it is; `auto` from the cgroup's CPU quota (v2
// cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us) rounded up, as ingress-nginx computes it, and
// the available parallelism without a quota. The cgroup files are fakes in a test folder.
import t from 'tap';
import { cgroupCpuQuota, resolveWorkerCount } from '../../../lib/dataplane/worker/worker-count.ts';

const six = () => 6;

const cases: Array<{ name: string; files: Record<string, unknown>; quota: number | null; auto: number }> = [
  {
    name: 'v2, no quota',
    files: { 'cgroup.controllers': 'cpu io memory', 'cpu.max': 'max 100000\n' },
    quota: null,
    auto: 6,
  },
  {
    name: 'v2, two CPUs',
    files: { 'cgroup.controllers': 'cpu', 'cpu.max': '200000 100000\n' },
    quota: 2,
    auto: 2,
  },
  {
    name: 'v2, 1.5 CPUs rounds up',
    files: { 'cgroup.controllers': 'cpu', 'cpu.max': '150000 100000\n' },
    quota: 2,
    auto: 2,
  },
  {
    name: 'v2, 250m rounds up to one',
    files: { 'cgroup.controllers': 'cpu', 'cpu.max': '25000 100000' },
    quota: 1,
    auto: 1,
  },
  {
    name: 'v2, no period: 100 ms',
    files: { 'cgroup.controllers': 'cpu', 'cpu.max': '300000' },
    quota: 3,
    auto: 3,
  },
  {
    name: 'v2, an odd period',
    files: { 'cgroup.controllers': 'cpu', 'cpu.max': '400000 50000' },
    quota: 8,
    auto: 8,
  },
  { name: 'v2, unreadable cpu.max', files: { 'cgroup.controllers': 'cpu' }, quota: null, auto: 6 },
  {
    name: 'v2, garbage',
    files: { 'cgroup.controllers': 'cpu', 'cpu.max': 'lots 100000' },
    quota: null,
    auto: 6,
  },
  {
    name: 'v1, no quota (-1)',
    files: { cpu: { 'cpu.cfs_quota_us': '-1\n', 'cpu.cfs_period_us': '100000\n' } },
    quota: null,
    auto: 6,
  },
  {
    name: 'v1, four CPUs',
    files: { cpu: { 'cpu.cfs_quota_us': '400000\n', 'cpu.cfs_period_us': '100000\n' } },
    quota: 4,
    auto: 4,
  },
  {
    name: 'v1, 2.1 CPUs rounds up',
    files: { cpu: { 'cpu.cfs_quota_us': '210000', 'cpu.cfs_period_us': '100000' } },
    quota: 3,
    auto: 3,
  },
  { name: 'v1, no period file', files: { cpu: { 'cpu.cfs_quota_us': '200000' } }, quota: null, auto: 6 },
  { name: 'no cgroup files at all', files: {}, quota: null, auto: 6 },
];

for (const c of cases) {
  t.test(`auto: ${c.name}`, async (t) => {
    const root = t.testdir(c.files as Parameters<typeof t.testdir>[0]);
    t.equal(cgroupCpuQuota(root), c.quota, 'the quota in whole CPUs');
    t.equal(resolveWorkerCount('auto', { cgroupRoot: root, parallelism: six }), c.auto, 'the thread count');
  });
}

t.test('a number is taken as it is, whatever the quota', async (t) => {
  const root = t.testdir({ 'cgroup.controllers': 'cpu', 'cpu.max': '100000 100000' });
  t.equal(resolveWorkerCount(3, { cgroupRoot: root, parallelism: six }), 3);
  t.equal(resolveWorkerCount(1, { cgroupRoot: root, parallelism: six }), 1);
});

t.test('auto without options reads this machine: at least one thread', async (t) => {
  t.ok(resolveWorkerCount('auto') >= 1);
});
