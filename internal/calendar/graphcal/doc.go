// Package graphcal mirrors Microsoft 365 calendars, read through Microsoft
// Graph, into vdir folders of .ics files (DATA/calendar/graph/<account>/
// <calendar>) that the calendar index reads like any other collection, and
// writes events back for calwrite (Collection is its Backend).
//
// Sync: one Graph calendar view per calendar over the index's horizon
// (Window), followed by delta rounds (/me/calendars/{id}/calendarView/
// delta, pages through @odata.nextLink, the round's @odata.deltaLink kept
// in the folder's .hestia-graph.json). A 410 Gone on the stored token, a
// month's move of the window or a missing state starts a full round.
// Files are written only once a round was read whole. The view lists
// single events and the occurrences and exceptions of series, not their
// masters, so each series whose members changed has its master fetched
// (GET /me/events/{id}) and its file rebuilt. The delta lists an
// occurrence by its id, series, type, start and end only (its start is
// its original start); an exception listed as briefly is read whole.
//
// Mapping (Object): a Graph event is one VEVENT: subject → SUMMARY; body
// (HTML rendered to text) → DESCRIPTION; location → LOCATION; start/end →
// DTSTART/DTEND in the zone the event was made in (originalStartTimeZone,
// a Windows name mapped to IANA through CLDR's windowsZones.xml, table in
// windowszones.go; an unknown zone keeps UTC with a warning), DATEs when
// isAllDay; iCalUId → UID (an event Hestia created keeps Hestia's UID,
// which Graph holds as its transactionId); lastModifiedDateTime → DTSTAMP
// and LAST-MODIFIED; attendees and organizer → ATTENDEE (ROLE, PARTSTAT,
// CUTYPE=RESOURCE) and ORGANIZER; showAs → TRANSP and
// X-MICROSOFT-CDO-BUSYSTATUS; sensitivity → CLASS; isCancelled → STATUS;
// categories → CATEGORIES; the reminder → a VALARM; the online meeting's
// join URL → CONFERENCE (RFC 7986). A series master's recurrence (pattern
// and range) becomes its RRULE; exceptions (type exception, seriesMasterId)
// become RECURRENCE-ID overrides in the master's file, named by their
// originalStart; an occurrence the pattern has inside the window but the
// view does not list was cancelled and becomes an EXDATE. The change key
// is the object's ETag (If-Match on writes).
//
// Writes (backend.go): calwrite journals and confirms as for CalDAV; a
// create is a POST with the UID as transactionId (Graph's idempotency key),
// an update the PATCH of the fields that changed (If-Match: the change
// key; 412 is calwrite.ErrConflict), a one-occurrence change the PATCH or
// DELETE of that occurrence, found among the series' instances.
// Recurrence changes are refused, as are rules Outlook cannot hold.
package graphcal
