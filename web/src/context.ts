import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { App } from './state/app';

export const AppContext = createContext<App | null>(null);

export function useApp(): App {
  const a = useContext(AppContext);
  if (!a) throw new Error('useApp outside AppContext');
  return a;
}
