// The Temporal messages of `regionRefresh`, shared by the workflow and the ribs process that drives it
// (schema/PROTOCOL.md "Rib run seams and ops").
import { defineQuery, defineSignal } from '@temporalio/workflow';
import { refreshMessages, type RefreshAttach, type RefreshDetach, type RefreshLive, type RegionRefreshStatus } from '@keelson/schema';

/** Signal `attach`: a ribs process (re)takes the region, with its intervals and live state. */
export const refreshAttachSignal = defineSignal<[RefreshAttach]>(refreshMessages.attach);

/** Signal `live`: the key gained its first, or lost its last, live subscriber in the holder. */
export const refreshLiveSignal = defineSignal<[RefreshLive]>(refreshMessages.live);

/** Signal `detach`: the holder stops serving the region; the heartbeat ends. */
export const refreshDetachSignal = defineSignal<[RefreshDetach]>(refreshMessages.detach);

/** Query `status` on `regionRefresh`. */
export const refreshStatusQuery = defineQuery<RegionRefreshStatus>(refreshMessages.status);
