/**
 * Suggested reply labels (shared/replies/label.ts): real-looking replies in English, German, French
 * and Spanish, each with the label an SDR would give it; quoted history and signatures never decide;
 * automatic replies recognised by their headers are not replies at all (they never reach the rules).
 */
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { classifyInbound, replyText } from '../../channels/inbound-mail.ts';
import type { ReplyLabel } from '../../shared/model/index.ts';
import { fold, LABEL_RULES, suggestReplyLabel } from '../../shared/replies/label.ts';
import { withoutQuotedHistory } from '../../shared/replies/quoted.ts';

type Case = [lang: string, text: string, label: ReplyLabel | null];

const CASES: Case[] = [
  // interested
  ['en', 'Thanks for reaching out! Happy to chat next week.', 'interested'],
  ['en', 'Sounds interesting, do you have time on Thursday?', 'interested'],
  ['en', 'Sure, send me a calendar link.', 'interested'],
  ['en', "Hi Ada,\n\nGood timing actually, we're reviewing vendors this month. Could we do 30 minutes on Tuesday?\n\nBest,\nTom", 'interested'],
  ['de', 'Hallo Frau Lovelace,\n\ndas klingt interessant. Lassen Sie uns gerne nächste Woche telefonieren.\n\nViele Grüße\nJonas Weber', 'interested'],
  ['de', 'Schicken Sie mir bitte mehr Informationen zu den Preisen.', 'interested'],
  ['fr', "Bonjour,\n\nÇa m'intéresse. Je suis disponible mardi après-midi pour un appel.\n\nCordialement,\nClaire", 'interested'],
  ['fr', "Avec plaisir, envoyez-moi plus d'informations.", 'interested'],
  ['es', 'Hola Ada, me interesa. ¿Podemos agendar una llamada el jueves?', 'interested'],
  ['es', 'Suena bien, con gusto hablamos. Envíame más información.', 'interested'],
  // not interested
  ['en', 'Not interested at the moment, thanks.', 'not_interested'],
  ['en', 'Please reach out again next quarter.', 'not_interested'],
  ['en', "Thanks, but we're all set with our current provider.", 'not_interested'],
  ['en', 'No thanks.', 'not_interested'],
  ['de', 'Vielen Dank, aber wir haben kein Interesse.', 'not_interested'],
  ['de', 'Wir arbeiten bereits mit einem anderen Anbieter. Nein danke.', 'not_interested'],
  ['de', 'Gerne, aber nicht jetzt.', 'not_interested'],
  ['fr', 'Merci, mais je ne suis pas intéressé.', 'not_interested'],
  ['fr', "Non merci, ce n'est pas notre priorité pour le moment.", 'not_interested'],
  ['es', 'Gracias, pero no nos interesa.', 'not_interested'],
  ['es', 'Ya tenemos una solución para eso, gracias.', 'not_interested'],
  // out of office (written by a person, or an autoresponder without the headers)
  ['en', "I'm out of the office until Monday 17th with limited access to email.", 'out_of_office'],
  ['en', 'I am on parental leave until March. For urgent matters contact office@acme.example.', 'out_of_office'],
  ['de', 'Vielen Dank für Ihre Nachricht. Ich bin bis zum 24.11. nicht im Büro und ab dann wieder erreichbar.', 'out_of_office'],
  ['de', 'Ich befinde mich derzeit im Urlaub.', 'out_of_office'],
  ['fr', 'Bonjour, je suis absente du bureau jusqu’au 3 décembre.', 'out_of_office'],
  ['fr', 'Je suis en congés, de retour le lundi 8.', 'out_of_office'],
  ['es', 'Estoy fuera de la oficina hasta el 2 de diciembre.', 'out_of_office'],
  ['es', 'Me encuentro de vacaciones, estaré de vuelta el lunes.', 'out_of_office'],
  // wrong person
  ['en', 'I am not the right person for this, sorry.', 'wrong_person'],
  ['en', "I no longer work at Acme. You should reach out to Jane Doe (jane@acme.example), she's the right person for this.", 'wrong_person'],
  ['en', "I'm not responsible for procurement, please reach out to our ops team.", 'wrong_person'],
  ['de', 'Ich bin dafür nicht zuständig. Wenden Sie sich bitte an Herrn Schmidt.', 'wrong_person'],
  ['de', 'Frau Keller ist nicht mehr bei uns im Unternehmen.', 'wrong_person'],
  ['fr', "Je ne suis pas la bonne personne, contactez plutôt Julien qui s'en occupe.", 'wrong_person'],
  ['fr', "Bonjour, je ne travaille plus chez Durand SA depuis l'été.", 'wrong_person'],
  ['es', 'No soy la persona adecuada, hable con María del equipo de compras.', 'wrong_person'],
  ['es', 'Ya no trabajo en esa empresa.', 'wrong_person'],
  // unsubscribe
  ['en', 'Please remove me from your mailing list.', 'unsubscribe'],
  ['en', 'Unsubscribe', 'unsubscribe'],
  ['en', "Not interested. Stop emailing me and don't contact me again.", 'unsubscribe'],
  ['de', 'Bitte entfernen Sie mich aus Ihrem Verteiler.', 'unsubscribe'],
  ['de', 'Kontaktieren Sie mich bitte nicht mehr. Keine weiteren E-Mails!', 'unsubscribe'],
  ['fr', 'Merci de me désinscrire de vos envois.', 'unsubscribe'],
  ['fr', 'Retirez-moi de votre liste, et ne me contactez plus.', 'unsubscribe'],
  ['es', 'Por favor, denme de baja de su lista.', 'unsubscribe'],
  ['es', 'No me escriban más, gracias.', 'unsubscribe'],
  // nothing a rule can decide: the SDR labels it
  ['en', 'Who is this?', null],
  ['de', 'Woher haben Sie meine Nummer?', null],
  ['fr', 'Pouvez-vous préciser ?', null],
  ['es', '¿Quién le dio mi correo?', null],
  ['en', '', null],
];

describe('suggested reply labels', () => {
  it.each(CASES)('%s: %j is %s', (_lang, text, label) => {
    expect(suggestReplyLabel(text)?.label ?? null).toBe(label);
  });

  it('has rules for every label but other, in each of the four languages', () => {
    for (const label of ['interested', 'not_interested', 'out_of_office', 'wrong_person', 'unsubscribe'] as const) {
      for (const lang of ['en', 'de', 'fr', 'es'] as const) {
        expect(LABEL_RULES.some((r) => r.label === label && r.lang === lang), `${label} ${lang}`).toBe(true);
      }
    }
    expect(LABEL_RULES.some((r) => r.label === 'other')).toBe(false);
  });

  it('says which phrase decided', () => {
    expect(suggestReplyLabel('Klingt gut, lassen Sie uns telefonieren.')).toEqual({ label: 'interested', lang: 'de', matched: 'klingt gut' });
  });

  it('folds case, accents, ß and typographic apostrophes', () => {
    expect(fold('Ça M’INTÉRESSE — Grüße, Straße')).toBe("ca m'interesse - grusse, strasse");
  });

  const QUOTED: [what: string, text: string, label: ReplyLabel | null][] = [
    ['Gmail (en) quoting our question', 'Not right now, thanks.\n\nOn Mon, 3 Nov 2026 at 09:12, Ada Lovelace <ada@acme.example> wrote:\n> Would you be interested in a quick call on Tuesday?\n> If not, reply unsubscribe.', 'not_interested'],
    ['Gmail with a wrapped attribution', 'Happy to chat!\n\nOn Mon, 3 Nov 2026 at 09:12, Ada Lovelace <\nada@acme.example> wrote:\n\nPlease remove me from your list', 'interested'],
    ['Outlook (de) header block', 'Kein Interesse.\n\nVon: Ada Lovelace <ada@acme.example>\nGesendet: Montag, 3. November 2026 09:12\nAn: Jonas Weber\nBetreff: Kurze Frage\n\nHätten Sie Interesse an einem Termin?', 'not_interested'],
    ['Apple Mail (fr)', 'Volontiers, mardi me va.\n\nLe 3 nov. 2026 à 09:12, Ada Lovelace <ada@acme.example> a écrit :\n\n> Seriez-vous absent du bureau ?', 'interested'],
    ['Gmail (es)', 'No, gracias.\n\nEl lun, 3 nov 2026 a las 9:12, Ada Lovelace (<ada@acme.example>) escribió:\n> ¿Le interesa una demo?', 'not_interested'],
    ['Thunderbird (de)', 'Gerne, Donnerstag passt.\n\nAm 03.11.26 um 09:12 schrieb Ada Lovelace:\n> Bitte abmelden', 'interested'],
    ['a signature that mentions leave', 'Sounds good, talk Thursday.\n-- \nTom Baker | Head of Ops\nOn parental leave in December', 'interested'],
    ['a mobile footer', 'Who is this?\n\nSent from my iPhone\nUnsubscribe', null],
    ['Outlook separator and original message', 'Please take me off your list.\n\n-----Original Message-----\nFrom: Ada\nSounds great!', 'unsubscribe'],
  ];

  it.each(QUOTED)('ignores quoted history: %s', (_what, text, label) => {
    expect(suggestReplyLabel(text)?.label ?? null).toBe(label);
  });

  it('keeps a lone "From:" sentence, which is not a quoted header block', () => {
    expect(withoutQuotedHistory('From: the team, thanks!\nWe are not interested.')).toBe('From: the team, thanks!\nWe are not interested.');
  });
});

/** A message as it arrives over IMAP: mailparser reads it, inbound-mail.ts says what it is. */
async function arriving(headers: string, body: string) {
  const raw = `From: Tom Baker <tom@prospect.example>\r\nTo: ada@acme.example\r\nMessage-ID: <r1@prospect.example>\r\nDate: Mon, 3 Nov 2026 09:30:00 +0000\r\n${headers}Content-Type: text/plain; charset=utf-8\r\n\r\n${body}`;
  const mail = await simpleParser(raw);
  const kind = classifyInbound(mail, raw);
  return { kind: kind.kind, label: kind.kind === 'reply' ? (suggestReplyLabel(replyText(mail))?.label ?? null) : null };
}

describe('out of office: by headers or by text', () => {
  it('an automatic reply by its headers is not a reply, so it gets no label', async () => {
    expect(await arriving('Subject: Re: Quick question\r\nAuto-Submitted: auto-replied\r\n', "I'm out of the office until Monday.")).toEqual({ kind: 'auto_reply', label: null });
    expect(await arriving('Subject: Abwesenheitsnotiz: Kurze Frage\r\n', 'Ich bin bis zum 24.11. nicht im Büro.')).toEqual({ kind: 'auto_reply', label: null });
  });

  it('an out-of-office text without those headers is a reply labelled out_of_office', async () => {
    expect(await arriving('Subject: Re: Quick question\r\n', "Thanks for your note, I'm on vacation until the 17th with limited access to email.")).toEqual({ kind: 'reply', label: 'out_of_office' });
  });

  it('replyText and the label rules cut the same quoted history', async () => {
    const body = 'Sounds great.\r\n\r\nOn Mon, 3 Nov 2026 at 09:12, Ada <ada@acme.example> wrote:\r\n> Please unsubscribe here\r\n';
    const mail = await simpleParser(`From: tom@prospect.example\r\nSubject: Re: Hi\r\nContent-Type: text/plain\r\n\r\n${body}`);
    expect(replyText(mail)).toBe('Sounds great.');
  });
});
