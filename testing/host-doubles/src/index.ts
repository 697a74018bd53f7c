export { InMemoryCredentialStore } from './inMemoryCredentialStore';
export { InMemoryProjectsPort } from './inMemoryProjectsPort';
export { staticConfigPort } from './staticConfigPort';
