/** Options of {@link init}. */
export interface TrackerOptions {
  /** The program's id (a positive integer). Missing or invalid: the tracker sends nothing. */
  programId: number | string;
  /**
   * Where the tracking API lives, e.g. `https://track.example.com`. Default: the page's
   * own origin (the API behind the site's reverse proxy).
   */
  apiHost?: string;
  /**
   * Domain of the cookies, e.g. `example.co.uk`; `''` for a host-only cookie. Default:
   * the broadest domain the browser accepts, found by probing.
   */
  cookieDomain?: string;
  /** Log what the tracker does to the console, prefixed `[reftrack]`. Default: silent. */
  debug?: boolean;
}

/**
 * The tracking API's JSON answer, or `{success: false, error}` on a network error, a
 * non-2xx status or a tracker without a valid program id.
 */
export interface TrackResult {
  success: boolean;
  /** Click: the id stored in the `tracker_click_id` cookie. */
  click_id?: string;
  /** Click: the partner code of the link. */
  partner_code?: string;
  /** Click: the program's attribution window, the cookies' lifetime in days. */
  cookie_window_days?: number;
  message?: string;
  error?: string;
  [key: string]: unknown;
}

/** The signup reported by {@link trackLead}. */
export interface Lead {
  /** Your own id of the customer. */
  customer_key?: string;
  email?: string;
}

/**
 * Configures the tracker and records the click of the page URL's `aff`. Only the first
 * call per page counts; later ones return its promise. Resolves with the click's answer,
 * or `null` when nothing was sent (no `aff`, the link of the last click, or a click that a
 * redirect link recorded and named in `rt_click`, whose id is kept). Never rejects.
 * Outside a browser it does nothing.
 */
export function init(options: TrackerOptions): Promise<TrackResult | null>;

/**
 * Records the click of the current URL's `aff`: call it after a client-side navigation.
 * Resolves like {@link init}; never rejects.
 */
export function trackClick(): Promise<TrackResult | null>;

/** The click id stored by the last tracked click, or `null`. */
export function getClickId(): string | null;

/** Records a signup (browser-mode lead). Resolves with the API's answer; never rejects. */
export function trackLead(lead?: Lead): Promise<TrackResult>;
