// Waiting for the data plane's swaps in end-to-end tests.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { runtimeSwapped } from '../../lib/dataplane/events.ts';

/** Resolves on the next runtime swap (the event the data plane publishes). */
export function nextSwap(timeoutMs = 5000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe(runtimeSwapped.name, onSwap);
      reject(new Error('no swap within the timeout'));
    }, timeoutMs);
    const onSwap = (message: unknown) => {
      clearTimeout(timer);
      unsubscribe(runtimeSwapped.name, onSwap);
      resolve(message);
    };
    subscribe(runtimeSwapped.name, onSwap);
  });
}
