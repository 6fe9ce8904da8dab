export async function runDaemon() { console.log('daemon flow: not yet'); }
