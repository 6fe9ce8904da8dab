// A minimal observable store: the app state lives in one object, replaced
// (never mutated) on every change, and components subscribe to slices.
import { useEffect, useRef, useState } from 'preact/hooks';

export class Store<T> {
  private listeners = new Set<() => void>();
  constructor(private state: T) {}

  get(): T {
    return this.state;
  }

  set(next: T | ((s: T) => T)) {
    const v = typeof next === 'function' ? (next as (s: T) => T)(this.state) : next;
    if (v === this.state) return;
    this.state = v;
    for (const l of [...this.listeners]) l();
  }

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}

/** Re-renders the component when the selected slice changes (by identity). */
export function useSelect<T, R>(store: Store<T>, sel: (s: T) => R): R {
  const selRef = useRef(sel);
  selRef.current = sel;
  const [value, setValue] = useState(() => sel(store.get()));
  useEffect(() => {
    const check = () => setValue(() => selRef.current(store.get()));
    check();
    return store.subscribe(check);
  }, [store]);
  return value;
}
