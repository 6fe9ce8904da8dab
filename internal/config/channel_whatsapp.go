package config

import (
	"strconv"
	"strings"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// WhatsAppChannel configures the whatsapp channel ([channels.whatsapp]); see
// internal/channels/whatsapp. It talks to Meta's WhatsApp Cloud API: the
// owner registers a business phone number in a Meta app, points the app's
// webhook at the daemon's public /channels/whatsapp/webhook route, and
// gives Hestia the number's id, an access token, the app secret (to check
// each delivery's signature) and the verify token chosen for the webhook.
type WhatsAppChannel struct {
	// Owners are the owner's WhatsApp ids (wa_id): the phone number in
	// international format, digits only, no "+" ("393471234567"). They
	// chat, approve and read.
	Owners []string `toml:"owners"`
	// Contacts are trusted people as "WA_ID" (chat and read) or
	// "WA_ID:scope+scope"; their messages are untrusted content.
	Contacts []string `toml:"contacts"`
	// APIURL is the Graph API root (tests point it at a fake).
	APIURL string `toml:"api_url"`
	// APIVersion is the Graph API version in every path ("v23.0"); Meta
	// retires a version about two years after its release.
	APIVersion string `toml:"api_version"`
	// PhoneNumberID is the business phone number's id (not the number
	// itself): messages are sent from it, and deliveries for other
	// numbers of the same app are ignored.
	PhoneNumberID string `toml:"phone_number_id"`
	// Token or TokenFile (owner-only) holds the access token (a system
	// user's permanent token; temporary ones expire within a day).
	Token     string `toml:"token" secret:"true"`
	TokenFile string `toml:"token_file"`
	// AppSecret or AppSecretFile holds the Meta app's secret, which signs
	// every webhook delivery (X-Hub-Signature-256).
	AppSecret     string `toml:"app_secret" secret:"true"`
	AppSecretFile string `toml:"app_secret_file"`
	// VerifyToken or VerifyTokenFile holds the verify token typed into the
	// app's webhook settings, echoed back in the subscription handshake.
	VerifyToken     string `toml:"verify_token" secret:"true"`
	VerifyTokenFile string `toml:"verify_token_file"`
	// TemplateName and TemplateLanguage name an approved message template
	// sent instead of a free-form message once the 24-hour customer
	// service window has closed; empty refuses such sends with an error.
	TemplateName     string `toml:"template_name"`
	TemplateLanguage string `toml:"template_language"`
	// TemplateBodyParam: the template's body has one {{1}} parameter,
	// which carries the message text (on one line, shortened).
	TemplateBodyParam bool `toml:"template_body_param"`
	// MaxVoiceMB refuses larger voice notes (WhatsApp's own audio limit
	// is 16 MB).
	MaxVoiceMB int `toml:"max_voice_mb"`
}

// Enabled reports whether the channel is configured.
func (c WhatsAppChannel) Enabled() bool { return c.Token != "" || c.TokenFile != "" }

func defaultWhatsApp() WhatsAppChannel {
	return WhatsAppChannel{
		APIURL:           "https://graph.facebook.com",
		APIVersion:       "v23.0",
		TemplateLanguage: "en_US",
		MaxVoiceMB:       16,
	}
}

var (
	waIDRe       = lazyre.New(`^[1-9][0-9]{5,19}$`)
	waVersionRe  = lazyre.New(`^v[0-9]{1,3}\.[0-9]{1,2}$`)
	waTemplateRe = lazyre.New(`^[a-z0-9_]{1,512}$`)
	waLanguageRe = lazyre.New(`^[a-z]{2,3}(_[A-Z]{2}|_[A-Za-z]{4})?$`)
	waPhoneIDRe  = lazyre.New(`^[0-9]{1,32}$`)
)

const waIDAllowedMsg = "the wa_id: the phone number in international format, digits only, without + or spaces (393471234567)"

func (c WhatsAppChannel) validate() []error {
	const key = "channels.whatsapp"
	var errs []error
	errs = append(errs, validateIdentity(key, c.Enabled(), c.Owners, c.Contacts)...)
	// The relay matches ids exactly and WhatsApp names senders by wa_id
	// (digits, no "+"): "+39 347…" would never match, silently.
	for _, o := range c.Owners {
		if o = strings.TrimSpace(o); o != "" && !waIDRe.MatchString(o) {
			errs = append(errs, &Error{Key: key + ".owners", Value: o, Allowed: waIDAllowedMsg})
		}
	}
	for _, ct := range c.Contacts {
		if id, _, err := ParseChannelContact(ct); err == nil && !waIDRe.MatchString(id) {
			errs = append(errs, &Error{Key: key + ".contacts", Value: ct, Allowed: waIDAllowedMsg + ", optionally followed by :scope+scope"})
		}
	}
	errs = append(errs, validateSecretFile(key+".token_file", c.TokenFile)...)
	errs = append(errs, validateSecretFile(key+".app_secret_file", c.AppSecretFile)...)
	errs = append(errs, validateSecretFile(key+".verify_token_file", c.VerifyTokenFile)...)
	errs = append(errs, validateHTTPURL(key+".api_url", c.APIURL, "https://graph.facebook.com")...)
	if !waVersionRe.MatchString(c.APIVersion) {
		errs = append(errs, &Error{Key: key + ".api_version", Value: c.APIVersion, Allowed: "a Graph API version such as v23.0"})
	}
	if c.Enabled() {
		if !waPhoneIDRe.MatchString(c.PhoneNumberID) {
			errs = append(errs, &Error{Key: key + ".phone_number_id", Value: c.PhoneNumberID, Allowed: "the numeric id of the business phone number (WhatsApp Manager → API setup), not the number itself"})
		}
		if c.AppSecret == "" && c.AppSecretFile == "" {
			errs = append(errs, &Error{Key: key + ".app_secret", Value: "", Allowed: "the Meta app's secret (or app_secret_file): every webhook delivery's signature is checked with it"})
		}
		if c.VerifyToken == "" && c.VerifyTokenFile == "" {
			errs = append(errs, &Error{Key: key + ".verify_token", Value: "", Allowed: "the verify token typed into the app's webhook settings (or verify_token_file)"})
		}
	}
	if c.TemplateName != "" {
		if !waTemplateRe.MatchString(c.TemplateName) {
			errs = append(errs, &Error{Key: key + ".template_name", Value: c.TemplateName, Allowed: "an approved template's name: lowercase letters, digits and underscores"})
		}
		if !waLanguageRe.MatchString(c.TemplateLanguage) {
			errs = append(errs, &Error{Key: key + ".template_language", Value: c.TemplateLanguage, Allowed: "the template's language code, such as en_US, it or pt_BR"})
		}
	} else if c.TemplateBodyParam {
		errs = append(errs, &Error{Key: key + ".template_body_param", Value: "true", Allowed: "false unless template_name is set"})
	}
	if c.MaxVoiceMB < 1 || c.MaxVoiceMB > 16 {
		errs = append(errs, &Error{Key: key + ".max_voice_mb", Value: strconv.Itoa(c.MaxVoiceMB), Allowed: "an integer from 1 to 16 (WhatsApp's audio limit)"})
	}
	return errs
}
