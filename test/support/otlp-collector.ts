// A local OTLP/gRPC trace collector for end-to-end tests: a real gRPC server (@grpc/grpc-js) serving
// OTLP's TraceService/Export. It decodes what the SDK's exporter sends into plain spans with the
// protobufjs code OpenTelemetry JS generated from opentelemetry-proto: the devDependency
// otlp-transformer-protobufjs is @opentelemetry/otlp-transformer 0.216, the last release whose
// generated code has the trace messages (the current SDK writes them by hand and ships no schema).
// Tests await spans by a predicate; `stop` closes it (a collector that is down).
import { EventEmitter, once } from 'node:events';
import { createRequire } from 'node:module';
import * as grpc from '@grpc/grpc-js';

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

// The plain objects of the generated code's toObject (camelCase, enums and 64-bit integers as
// strings); only what the collector reads is typed here, every field is decoded.
interface WireValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string;
  doubleValue?: number;
}
interface WireKeyValue {
  key: string;
  value?: WireValue;
}
interface WireSpan {
  traceId: Uint8Array;
  spanId: Uint8Array;
  parentSpanId: Uint8Array;
  traceState: string;
  name: string;
  kind: string;
  status?: { code: string };
  attributes: WireKeyValue[];
}
interface WireRequest {
  resourceSpans: Array<{
    resource?: { attributes: WireKeyValue[] };
    scopeSpans: Array<{ spans: WireSpan[] }>;
  }>;
}

/** A message class of protobufjs static code (its root.d.ts types the root as a bare Root). */
interface GeneratedMessage {
  decode(bytes: Uint8Array): object;
  encode(message: object): { finish(): Uint8Array };
  fromObject(object: object): object;
  toObject(
    message: object,
    options: { enums: StringConstructor; longs: StringConstructor; defaults: boolean },
  ): object;
}
interface GeneratedRoot {
  opentelemetry: {
    proto: {
      collector: {
        trace: {
          v1: { ExportTraceServiceRequest: GeneratedMessage; ExportTraceServiceResponse: GeneratedMessage };
        };
      };
    };
  };
}

// The package's exports-free layout lets a plain require reach the generated file.
const generated = createRequire(import.meta.url)(
  'otlp-transformer-protobufjs/build/src/generated/root.js',
) as GeneratedRoot;
const { ExportTraceServiceRequest, ExportTraceServiceResponse } =
  generated.opentelemetry.proto.collector.trace.v1;

/** An Export request as decoded, and how many of its bytes were fields the schema does not know. */
interface Decoded {
  request: WireRequest;
  unknownBytes: number;
}

// The decoder skips fields it does not know; encoding the decoded message again writes only the
// known ones, so a shorter result means the SDK wrote something the schema would not have read.
function decode(bytes: Buffer): Decoded {
  const message = ExportTraceServiceRequest.decode(bytes);
  const known = ExportTraceServiceRequest.encode(message).finish().length;
  const options = { enums: String, longs: String, defaults: true };
  const request = ExportTraceServiceRequest.toObject(message, options) as WireRequest;
  return { request, unknownBytes: bytes.length - known };
}

// grpc-js's form of TraceService/Export (the path is opentelemetry-proto's package, service and rpc).
const TRACE_SERVICE: grpc.ServiceDefinition = {
  Export: {
    path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
    requestStream: false,
    responseStream: false,
    requestSerialize: ({ request }: Decoded) =>
      Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(request)).finish()),
    requestDeserialize: decode,
    responseSerialize: (response: object) =>
      Buffer.from(
        ExportTraceServiceResponse.encode(ExportTraceServiceResponse.fromObject(response)).finish(),
      ),
    responseDeserialize: (bytes: Buffer) => ExportTraceServiceResponse.decode(bytes),
  },
};

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

function attributesOf(list: readonly WireKeyValue[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list) {
    if (value === undefined) continue;
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
  }
  return out;
}

export class OtlpCollector {
  readonly spans: CollectedSpan[] = [];
  /** Export calls received (a batch each) */
  exports = 0;
  /** bytes of the Export requests in fields the OTLP schema does not know: 0 when it read them all */
  unknownBytes = 0;
  port = 0;
  readonly #events = new EventEmitter();
  readonly #server = new grpc.Server();

  static async start(): Promise<OtlpCollector> {
    const collector = new OtlpCollector();
    await collector.#listen();
    return collector;
  }

  async #listen(): Promise<void> {
    this.#server.addService(TRACE_SERVICE, {
      Export: (call: grpc.ServerUnaryCall<Decoded, object>, callback: grpc.sendUnaryData<object>) => {
        this.exports++;
        this.unknownBytes += call.request.unknownBytes;
        for (const resourceSpans of call.request.request.resourceSpans) {
          const resource = attributesOf(resourceSpans.resource?.attributes ?? []);
          for (const scope of resourceSpans.scopeSpans) {
            for (const span of scope.spans) {
              this.spans.push({
                traceId: hex(span.traceId),
                spanId: hex(span.spanId),
                parentSpanId: hex(span.parentSpanId),
                traceState: span.traceState,
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
