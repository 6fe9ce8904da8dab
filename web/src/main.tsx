import { render } from 'preact';
import { Root } from './App';
import { App } from './state/app';
import './styles/app.css';

const app = new App();
app.start();
render(<Root app={app} />, document.getElementById('app')!);

if ('serviceWorker' in navigator && import.meta.env.PROD) {
  addEventListener('load', () => {
    navigator.serviceWorker.register('/sw.js').catch(() => {
      // The app works without it; only install and offline shell need it.
    });
  });
}
