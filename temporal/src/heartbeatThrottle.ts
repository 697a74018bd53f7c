/**
 * How often at most an activity's heartbeats reach the server. The SDK's own throttle is 80% of the
 * heartbeat timeout, which leaves a loaded worker a fifth of it as slack and delays a cancel (it rides
 * on a heartbeat's answer) by most of it; one second keeps both short.
 */
export const HEARTBEAT_THROTTLE_INTERVAL = '1 second';
