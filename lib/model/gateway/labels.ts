// metav1.LabelSelector against a Namespace's labels (allowedRoutes `from: Selector`): matchLabels and
// matchExpressions are ANDed; an empty selector selects every namespace, as in Kubernetes.

import type { LabelSelector } from './k8s.ts';
import { text } from './read.ts';

/** Why the selector cannot be evaluated (an unknown operator, In without values), or null. */
export function selectorProblem(selector: LabelSelector): string | null {
  for (const expression of Array.isArray(selector.matchExpressions) ? selector.matchExpressions : []) {
    const operator = expression?.operator;
    const values = Array.isArray(expression?.values) ? expression.values : [];
    if (typeof expression?.key !== 'string' || expression.key === '') return 'a matchExpression has no key';
    if (operator === 'In' || operator === 'NotIn') {
      if (values.length === 0) return `matchExpression ${expression.key} ${operator} has no values`;
    } else if (operator === 'Exists' || operator === 'DoesNotExist') {
      if (values.length !== 0) return `matchExpression ${expression.key} ${operator} must have no values`;
    } else {
      return `matchExpression ${expression.key}: unknown operator ${text(operator)}`;
    }
  }
  return null;
}

/** Whether `labels` satisfy the selector; a selector with a problem selects nothing. */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  if (selectorProblem(selector) !== null) return false;
  const matchLabels = selector.matchLabels ?? {};
  for (const key of Object.keys(matchLabels)) {
    if (labels[key] !== matchLabels[key]) return false;
  }
  for (const expression of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, expression.key);
    const value = labels[expression.key];
    const values = expression.values ?? [];
    switch (expression.operator) {
      case 'In':
        if (!has || !values.includes(value as string)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(value as string)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
    }
  }
  return true;
}
