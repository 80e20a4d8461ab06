// A local OTLP/gRPC trace collector for end-to-end tests: a real gRPC server (@grpc/grpc-js) serving
// OTLP's TraceService/Export, which decodes what the SDK's exporter sends (otlp-trace.proto) into
// plain spans. Tests await spans by a predicate; `stop` closes it (a collector that is down).
import { EventEmitter, once } from 'node:events';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export interface CollectedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span */
  parentSpanId: string;
  traceState: string;
  name: string;
  /** SPAN_KIND_SERVER, ... */
  kind: string;
  /** STATUS_CODE_UNSET, STATUS_CODE_ERROR, ... */
  status: string;
  attributes: Record<string, string | number | boolean>;
  /** the resource's attributes (service.name) */
  resource: Record<string, string | number | boolean>;
}

interface WireValue {
  string_value?: string;
  bool_value?: boolean;
  int_value?: string;
  double_value?: number;
}
interface WireKeyValue {
  key: string;
  value?: WireValue;
}
interface WireSpan {
  trace_id: Buffer;
  span_id: Buffer;
  parent_span_id: Buffer;
  trace_state: string;
  name: string;
  kind: string;
  status?: { code: string };
  attributes: WireKeyValue[];
}
interface WireRequest {
  resource_spans: Array<{
    resource?: { attributes: WireKeyValue[] };
    scope_spans: Array<{ spans: WireSpan[] }>;
  }>;
}

function attributesOf(list: readonly WireKeyValue[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list) {
    if (value === undefined) continue;
    if (value.string_value !== undefined) out[key] = value.string_value;
    else if (value.bool_value !== undefined) out[key] = value.bool_value;
    else if (value.int_value !== undefined) out[key] = Number(value.int_value);
    else if (value.double_value !== undefined) out[key] = value.double_value;
  }
  return out;
}

const PROTO = fileURLToPath(new URL('./otlp-trace.proto', import.meta.url));

export class OtlpCollector {
  readonly spans: CollectedSpan[] = [];
  /** Export calls received (a batch each) */
  exports = 0;
  port = 0;
  readonly #events = new EventEmitter();
  readonly #server = new grpc.Server();

  static async start(): Promise<OtlpCollector> {
    const collector = new OtlpCollector();
    await collector.#listen();
    return collector;
  }

  async #listen(): Promise<void> {
    const definition = protoLoader.loadSync(PROTO, {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as {
      opentelemetry: {
        proto: { collector: { trace: { v1: { TraceService: { service: grpc.ServiceDefinition } } } } };
      };
    };
    const service = loaded.opentelemetry.proto.collector.trace.v1.TraceService.service;
    this.#server.addService(service, {
      Export: (call: grpc.ServerUnaryCall<WireRequest, object>, callback: grpc.sendUnaryData<object>) => {
        this.exports++;
        for (const resourceSpans of call.request.resource_spans) {
          const resource = attributesOf(resourceSpans.resource?.attributes ?? []);
          for (const scope of resourceSpans.scope_spans) {
            for (const span of scope.spans) {
              this.spans.push({
                traceId: span.trace_id.toString('hex'),
                spanId: span.span_id.toString('hex'),
                parentSpanId: span.parent_span_id.toString('hex'),
                traceState: span.trace_state,
                name: span.name,
                kind: span.kind,
                status: span.status?.code ?? 'STATUS_CODE_UNSET',
                attributes: attributesOf(span.attributes),
                resource,
              });
            }
          }
        }
        callback(null, {});
        this.#events.emit('spans');
      },
    });
    this.port = await new Promise<number>((resolve, reject) => {
      this.#server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) =>
        error === null ? resolve(port) : reject(error),
      );
    });
  }

  /** The first span received that `match` accepts, awaited as batches arrive. */
  async span(match: (span: CollectedSpan) => boolean): Promise<CollectedSpan> {
    for (;;) {
      const found = this.spans.find(match);
      if (found !== undefined) return found;
      await once(this.#events, 'spans');
    }
  }

  /** Stops at once: connections cut, the port closed (a collector that went down). */
  stop(): void {
    this.#server.forceShutdown();
  }
}
