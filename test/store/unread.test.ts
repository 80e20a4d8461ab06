// What the sources drop from metadata before the store keeps an object (lib/store/unread.ts).
import t from 'tap';
import {
  dropUnreadMetadata,
  LAST_APPLIED_ANNOTATION,
  withoutUnreadMetadata,
} from '../../lib/store/unread.ts';

const owners = [{ manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:spec': {} } }];

t.test('a table: what stays, what goes', async (t) => {
  const cases: Array<[string, unknown, unknown]> = [
    ['nothing to drop', { name: 'a', annotations: { x: '1' } }, { name: 'a', annotations: { x: '1' } }],
    ['managedFields', { name: 'a', uid: 'u', managedFields: owners }, { name: 'a', uid: 'u' }],
    [
      'the last-applied annotation, the others stay',
      { name: 'a', annotations: { [LAST_APPLIED_ANNOTATION]: '{}', x: '1' } },
      { name: 'a', annotations: { x: '1' } },
    ],
    [
      'both; labels, resourceVersion and creationTimestamp stay',
      {
        name: 'a',
        resourceVersion: '7',
        creationTimestamp: '2026-01-01T00:00:00Z',
        labels: { app: 'a' },
        annotations: { [LAST_APPLIED_ANNOTATION]: '{}' },
        managedFields: owners,
      },
      {
        name: 'a',
        resourceVersion: '7',
        creationTimestamp: '2026-01-01T00:00:00Z',
        labels: { app: 'a' },
        annotations: {},
      },
    ],
    ['not an object', 'text', 'text'],
    ['annotations not a map', { name: 'a', annotations: 'x' }, { name: 'a', annotations: 'x' }],
  ];
  for (const [name, input, expected] of cases) t.same(withoutUnreadMetadata(input), expected, name);
});

t.test(
  'the same object when there is nothing to drop; a copy, never a mutation, when there is',
  async (t) => {
    const plain = { name: 'a', annotations: { x: '1' } };
    t.equal(withoutUnreadMetadata(plain), plain);
    const full = { name: 'a', annotations: { [LAST_APPLIED_ANNOTATION]: '{}' }, managedFields: owners };
    const lean = withoutUnreadMetadata(full);
    t.not(lean, full);
    t.ok('managedFields' in full && LAST_APPLIED_ANNOTATION in full.annotations, 'the input is left alone');
  },
);

t.test('dropUnreadMetadata replaces the metadata of the object it is given', async (t) => {
  const object = { kind: 'Ingress', metadata: { name: 'a', managedFields: owners } };
  t.equal(dropUnreadMetadata(object), object, 'the same object: a client cache holding it sees the change');
  t.same(object.metadata, { name: 'a' });
});
