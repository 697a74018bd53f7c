// @keelson/platform: what every domain stands on. Each module is re-exported by name below.
export {};
