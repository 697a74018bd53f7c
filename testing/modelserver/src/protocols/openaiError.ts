/** The error body every OpenAI API answers with (Chat Completions, Responses, Embeddings). */
export function openaiErrorBody(status: number, message: string): unknown {
  const type = status >= 500 ? 'server_error' : status === 429 ? 'rate_limit_exceeded' : status === 401 ? 'authentication_error' : 'invalid_request_error';
  const code = status === 429 ? 'rate_limit_exceeded' : status === 404 ? 'not_found' : status === 401 ? 'invalid_api_key' : null;
  return { error: { message, type, param: null, code } };
}
