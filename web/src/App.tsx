import { useEffect } from 'preact/hooks';
import { Shell } from './components/Shell';
import { AppContext } from './context';
import { AuditPage } from './pages/Audit';
import { ChatPage } from './pages/Chat';
import { ActionsPage } from './pages/Actions';
import { JobsPage } from './pages/Jobs';
import { MailPage } from './pages/Mail';
import { MemoryPage } from './pages/Memory';
import { AgendaPage } from './pages/Agenda';
import { ContactsPage } from './pages/Contacts';
import { NotificationsPage } from './pages/Notifications';
import { SettingsPage } from './pages/Settings';
import { PairPage } from './pages/Pair';
import { SetupPage } from './pages/Setup';
import { SystemPage } from './pages/System';
import { UsagePage } from './pages/Usage';
import { navigate, onLinkClick, useRoute } from './router';
import type { App as AppCtl, UIState } from './state/app';
import { useSelect } from './state/store';

export function Root({ app }: { app: AppCtl }) {
  const route = useRoute();
  const paired = useSelect(app.ui, (u: UIState) => u.paired);
  useEffect(() => {
    document.addEventListener('click', onLinkClick);
    return () => document.removeEventListener('click', onLinkClick);
  }, []);
  useEffect(() => {
    const t = route.name === 'chat' ? 'Chat' : route.name === 'home' ? '' : route.name[0].toUpperCase() + route.name.slice(1);
    document.title = t ? `${t} · Hestia` : 'Hestia';
  }, [route]);
  // First open with no model and setup not dismissed: the setup page.
  useEffect(() => {
    if (!paired || route.name !== 'home') return;
    app.client.get<{ needed: boolean }>('/api/setup').then(
      (s) => s.needed && navigate('/setup', true),
      () => {},
    );
  }, [paired]);

  let page;
  if (!paired || route.name === 'pair') {
    page = <PairPage code={route.name === 'pair' ? route.code : undefined} />;
    return <AppContext.Provider value={app}>{page}</AppContext.Provider>;
  }
  switch (route.name) {
    case 'usage':
      page = <UsagePage />;
      break;
    case 'audit':
      page = <AuditPage />;
      break;
    case 'system':
      page = <SystemPage />;
      break;
    case 'mail':
      page = <MailPage id={route.id} />;
      break;
    case 'settings':
      page = <SettingsPage />;
      break;
    case 'jobs':
      page = <JobsPage />;
      break;
    case 'actions':
      page = <ActionsPage />;
      break;
    case 'memory':
      page = <MemoryPage />;
      break;
    case 'agenda':
      page = <AgendaPage />;
      break;
    case 'contacts':
      page = <ContactsPage />;
      break;
    case 'notifications':
      page = <NotificationsPage />;
      break;
    case 'setup':
      page = <SetupPage />;
      break;
    case 'chat':
      page = <ChatPage key={route.id} id={route.id} />;
      break;
    default:
      page = <ChatPage />;
  }
  return (
    <AppContext.Provider value={app}>
      <Shell route={route}>{page}</Shell>
    </AppContext.Provider>
  );
}
