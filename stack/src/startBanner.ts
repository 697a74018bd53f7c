/**
 * The GraphiQL lines `npm start` prints once the mesh is up. The URL carrying the admin token is
 * printed only to an interactive terminal — the one line that is not a log record. Anything else
 * (a pipe, a service manager, a log file) gets the URL without it and where the token file is, so
 * the token never lands in a log.
 */
export function graphiqlLines(graphiql: string, adminToken: { token: string; path: string } | null, interactive: boolean): string[] {
  if (!adminToken) {
    return [`GraphiQL:                   ${graphiql}`, 'Authentication:             OFF (KEELSON_AUTH=off): every process on this machine controls the mesh'];
  }
  const curl = `(curl -H "authorization: Bearer $(cat ${adminToken.path})" …)`;
  if (interactive) {
    // The token rides in the fragment: browsers never send it to a server, so it stays out of
    // access logs and Referer headers. The page moves it to the tab's session storage.
    return [`GraphiQL:                   ${graphiql}#token=${adminToken.token}`, `Admin token:                ${adminToken.path} ${curl}`];
  }
  return [
    `GraphiQL:                   ${graphiql} (open it with #token=<the admin token> appended; not printed: this output is not a terminal)`,
    `Admin token:                ${adminToken.path} ${curl}`,
  ];
}
