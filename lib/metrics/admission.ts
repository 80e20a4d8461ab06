// The validating admission webhook's series, under ingress-nginx's names where it has them
// (its AdmissionCollector's gauges and the check_success / check_errors counters), plus a count of
// reviews by result, which ingress-nginx lacks (its counters are per Ingress and skip the reviews it
// ignores or cannot read). The gauges hold the figures of the last review that built something:
// ingress-nginx sets them after an accepted review only; here a refused one sets them too.
//
// What ingress-nginx measures and what stands for it here:
// - admission_roundtrip_duration: the whole review (body read, parse, selection, build, verdict);
// - admission_render_duration / admission_render_ingresses: ingress-nginx renders every Ingress of
//   its class with the candidate; here the selection of the Ingresses the candidate can interact
//   with, and the number of Ingresses of the class it selects from (the candidate included);
// - admission_tested_duration / admission_tested_ingresses: the build, and the Ingresses built;
// - admission_config_size (the size of the nginx.conf it generated): absent, no configuration text
//   is generated.

import { Counter, Gauge, type Registry } from 'prom-client';
import type { AdmissionReviewed } from '../admission/events.ts';

const PREFIX = 'nginx_ingress_controller_';

export function createAdmissionMetrics(registers: Registry[]): { reviewed(event: AdmissionReviewed): void } {
  const gauge = (name: string, help: string) => new Gauge({ name: `${PREFIX}${name}`, help, registers });
  const roundtrip = gauge(
    'admission_roundtrip_duration',
    'The complete duration of the admission controller at the time to process a new event (float seconds)',
  );
  const renderSeconds = gauge(
    'admission_render_duration',
    'The processing duration of ingresses rendering by the admission controller (float seconds)',
  );
  const renderIngresses = gauge(
    'admission_render_ingresses',
    'The length of ingresses rendered by the admission controller',
  );
  const testedSeconds = gauge(
    'admission_tested_duration',
    'The processing duration of the admission controller tests (float seconds)',
  );
  const testedIngresses = gauge(
    'admission_tested_ingresses',
    'The length of ingresses processed by the admission controller',
  );
  const labelNames = ['namespace', 'ingress'];
  const success = new Counter({
    name: `${PREFIX}check_success`,
    help: 'Cumulative number of Ingress controller syntax check operations',
    labelNames,
    registers,
  });
  const errors = new Counter({
    name: `${PREFIX}check_errors`,
    help: 'Cumulative number of Ingress controller errors during syntax check operations',
    labelNames,
    registers,
  });
  const reviews = new Counter({
    name: 'ingress_ts_admission_reviews_total',
    help: 'Admission reviews answered, by result: allowed, denied, ignored (another class, a deletion), invalid (not a review of an Ingress: 400), error (500)',
    labelNames: ['result'],
    registers,
  });
  return {
    reviewed(event) {
      reviews.inc({ result: event.result });
      const verdict = event.verdict;
      if (verdict === undefined || verdict.outcome === 'ignored') return;
      const labels = { namespace: event.namespace, ingress: event.name };
      if (verdict.allowed) success.inc(labels);
      else errors.inc(labels);
      roundtrip.set(event.seconds);
      renderSeconds.set(verdict.selectMs / 1000);
      renderIngresses.set(verdict.ingresses);
      testedSeconds.set(verdict.buildMs / 1000);
      testedIngresses.set(verdict.tested);
    },
  };
}
