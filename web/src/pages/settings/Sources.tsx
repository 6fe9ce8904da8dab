// The read-only Settings sections: calendars, contacts, Telegram, the
// other messaging channels, MCP servers and mail folders as the daemon
// reads them, and the OAuth accounts (Accounts.tsx, which connects them).
// The first four are edited in setup (/setup) or config.toml; no secret is shown, only
// whether a password or token is set. Each messaging channel that is on
// has a connection test: the daemon proves its credentials with the
// platform without sending anything.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { useApp } from '../../context';
import { errText } from '../../lib/errors';
import type { DAVAccountView, FolderView, SettingsView, SourcesView } from '../../lib/settings';
import { navigate } from '../../router';
import { Accounts } from './Accounts';
import { Section } from './parts';
import '../../styles/settings-sources.css';

const none: SourcesView = {
  calendars: [],
  caldav: [],
  contacts: [],
  carddav: [],
  telegram: { enabled: false, token_file_set: false, owner_id: 0, contacts: [] },
  mcp_servers: [],
  mail_sources: [],
};

export function Sources({ view }: { view: SettingsView }) {
  const s = view.sources ?? none;
  return (
    <>
      <Calendars s={s} />
      <Contacts s={s} />
      <Telegram s={s} />
      <Channels s={s} />
      <Accounts s={s} />
      <MCPServers s={s} />
      <MailSources s={s} />
    </>
  );
}

function EditInSetup() {
  return (
    <div class="source-actions">
      <a class="btn" href="/setup" onClick={(e) => (e.preventDefault(), navigate('/setup'))}>
        Edit in setup
      </a>
    </div>
  );
}

function Empty({ children }: { children: ComponentChildren }) {
  return <p class="muted small source-empty">{children}</p>;
}

function Folders({ label, items }: { label: string; items: FolderView[] }) {
  return (
    <ul class="source-list" aria-label={label}>
      {items.map((f) => (
        <li key={f.name}>
          <strong>{f.name}</strong>
          <span class="mono small muted">{f.path}</span>
          {f.read_only && <span class="tag">read-only</span>}
        </li>
      ))}
    </ul>
  );
}

function DAV({ label, items }: { label: string; items: DAVAccountView[] }) {
  return (
    <ul class="source-list" aria-label={label}>
      {items.map((a) => (
        <li key={a.name}>
          <strong>{a.name}</strong>
          <span class="mono small muted">{a.url}</span>
          {a.username && <span class="small">{a.username}</span>}
          <span class="tag">{a.oauth_account ? `OAuth: ${a.oauth_account}` : a.password_set ? (a.password_file_set ? 'password file set' : 'password variable set') : 'no password set'}</span>
          {a.read_only && <span class="tag">read-only</span>}
        </li>
      ))}
    </ul>
  );
}

function Calendars({ s }: { s: SourcesView }) {
  const empty = s.calendars.length === 0 && s.caldav.length === 0;
  return (
    <Section id="s-calendars" title="Calendars" hint="Folders of .ics files (vdir) and CalDAV accounts, mirrored and searched locally.">
      {empty ? (
        <Empty>No calendars. Add a calendar folder or a CalDAV account in setup, or add [[calendar.sources]] to config.toml.</Empty>
      ) : (
        <>
          {s.calendars.length > 0 && <Folders label="Calendar folders" items={s.calendars} />}
          {s.caldav.length > 0 && <DAV label="CalDAV accounts" items={s.caldav} />}
        </>
      )}
      <EditInSetup />
    </Section>
  );
}

function Contacts({ s }: { s: SourcesView }) {
  const empty = s.contacts.length === 0 && s.carddav.length === 0;
  return (
    <Section id="s-contacts" title="Contacts" hint="Folders of .vcf files (vdir) and CardDAV accounts; Hestia reads contacts and never writes them.">
      {empty ? (
        <Empty>No address books. Add a contacts folder or a CardDAV account in setup, or add [[contacts.sources]] to config.toml.</Empty>
      ) : (
        <>
          {s.contacts.length > 0 && <Folders label="Contact folders" items={s.contacts} />}
          {s.carddav.length > 0 && <DAV label="CardDAV accounts" items={s.carddav} />}
        </>
      )}
      <EditInSetup />
    </Section>
  );
}

const channelNames: Record<string, string> = {
  slack: 'Slack',
  discord: 'Discord',
  whatsapp: 'WhatsApp',
  matrix: 'Matrix',
  signal: 'Signal',
  email: 'E-mail',
};

/** The answer of POST /api/settings/channels/{name}/test. */
interface ChannelTestResult {
  ok: boolean;
  who?: string;
  error?: string;
}

/** A "Test connection" button for one running channel and a live region
 * that says what the test found (present before the first test, so screen
 * readers announce the result when it arrives). */
function ChannelTest({ name, label }: { name: string; label: string }) {
  const app = useApp();
  const [busy, setBusy] = useState(false);
  const [res, setRes] = useState<ChannelTestResult | null>(null);
  const run = async () => {
    setBusy(true);
    setRes(null);
    try {
      setRes(await app.client.request<ChannelTestResult>('POST', `/api/settings/channels/${encodeURIComponent(name)}/test`));
    } catch (e) {
      setRes({ ok: false, error: errText(e) });
    } finally {
      setBusy(false);
    }
  };
  const state = busy ? 'busy' : res ? (res.ok ? 'ok' : 'fail') : 'idle';
  return (
    <div class={`channel-test channel-test-${state}`}>
      <button class="btn small" type="button" onClick={() => void run()} disabled={busy} aria-label={`Test connection to ${label}`}>
        {busy ? 'Testing…' : 'Test connection'}
      </button>
      <span class="channel-test-result small" role="status" aria-live="polite">
        {busy ? `Testing ${label}…` : res ? (res.ok ? `Connected as ${res.who ?? 'the bot'}` : `Failed: ${res.error ?? 'no reason given'}`) : ''}
      </span>
    </div>
  );
}

function Channels({ s }: { s: SourcesView }) {
  const on = (s.channels ?? []).filter((c) => c.enabled);
  return (
    <Section
      id="s-channels"
      title="Channels"
      hint="Chat with Hestia and answer approvals from the apps you already use. Only ids are shown here, never a token."
    >
      {on.length === 0 ? (
        <Empty>
          No channels are on. Add a [channels.slack], [channels.discord], [channels.whatsapp], [channels.matrix], [channels.signal] or
          [channels.email] table to config.toml with its credentials and your own id as an owner (config.example.toml shows each); a channel starts with the daemon's next start.
        </Empty>
      ) : (
        <ul class="source-list" aria-label="Channels">
          {on.map((c) => (
            <li key={c.name}>
              <strong>{channelNames[c.name] ?? c.name}</strong>
              <span class="mono small">{c.owners.length > 0 ? c.owners.join(', ') : 'no owner: nobody can chat'}</span>
              {c.contacts.length > 0 && <span class="small muted">trusted: {c.contacts.join(', ')}</span>}
              <ChannelTest name={c.name} label={channelNames[c.name] ?? c.name} />
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

function Telegram({ s }: { s: SourcesView }) {
  const t = s.telegram;
  return (
    <Section id="s-telegram" title="Telegram" hint="Chat with Hestia and approve actions from Telegram. The bot token is never shown here.">
      {!t.enabled ? (
        <Empty>Telegram is off. Set a bot token in setup (kept in a file readable only by you) or in HESTIA_TELEGRAM_TOKEN, and your Telegram user id as the owner.</Empty>
      ) : (
        <ul class="source-list" aria-label="Telegram">
          <li>
            <strong>On</strong>
            <span class="tag">{t.token_file_set ? 'token file set' : 'token set'}</span>
            <ChannelTest name="telegram" label="Telegram" />
          </li>
          <li>
            <span>Owner</span>
            <span class="mono small">{t.owner_id ? t.owner_id : 'not set: nobody can chat with the bot'}</span>
          </li>
          {t.contacts.map((c) => (
            <li key={c}>
              <span>Trusted</span>
              <span class="mono small">{c}</span>
            </li>
          ))}
        </ul>
      )}
      <EditInSetup />
    </Section>
  );
}

function MCPServers({ s }: { s: SourcesView }) {
  return (
    <Section id="s-mcp" title="MCP servers" hint="Outside tool servers the agent may use, each call under the same approvals as built-in tools.">
      {s.mcp_servers.length === 0 ? (
        <Empty>No MCP servers. Add a [mcp.servers.NAME] table with command (a local program) or url (an HTTP server) to config.toml; the daemon reads it at start.</Empty>
      ) : (
        <ul class="source-list" aria-label="MCP servers">
          {s.mcp_servers.map((m) => (
            <li key={m.name}>
              <strong>{m.name}</strong>
              <span class="mono small muted">{m.command ?? m.url}</span>
              <span class="tag">{m.command ? 'stdio' : 'HTTP'}</span>
              {m.disabled && <span class="tag">disabled</span>}
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

function MailSources({ s }: { s: SourcesView }) {
  return (
    <Section id="s-mail-sources" title="Mail folders" hint="Maildir folders the daemon rescans, so new mail appears and removed mail leaves the mirror. IMAP accounts are under Mail accounts.">
      {s.mail_sources_error && (
        <div class="callout error" role="alert">
          <span>Could not list mail folders: {s.mail_sources_error}</span>
        </div>
      )}
      {s.mail_sources.length === 0 ? (
        <Empty>No mail folders. Import one from a terminal with hestia mail import PATH; a folder is then rescanned until removed.</Empty>
      ) : (
        <ul class="source-list" aria-label="Mail folders">
          {s.mail_sources.map((m) => (
            <li key={m.path}>
              <span class="mono small">{m.path}</span>
              {m.from_config ? <span class="tag">config.toml</span> : m.account && <span class="tag">{m.account}</span>}
            </li>
          ))}
        </ul>
      )}
      <p class="muted small">
        To stop rescanning a folder run <code>hestia mail sources remove PATH</code> (the page cannot remove it: the daemon has no route for that); a config.toml folder is removed from mail.sources.
      </p>
    </Section>
  );
}
