/**
 * A suggested label for a received reply, from its text: phrase rules in English, German, French and
 * Spanish, no network service, so the same reply gets the same suggestion on every host and in every
 * test. The SDR confirms or changes it in the inbox (inbox.setLabel); the suggestion is kept beside
 * the confirmed label (messages.replyLabelSuggested / replyLabel).
 *
 * How: only the new text counts (quoted history and signature are cut, quoted.ts); it is folded
 * (lower case, accents dropped, ß as ss, typographic apostrophes as ') so a rule is written once per
 * language without its accented variants. Labels are tried in PRIORITY order and the first that has
 * a matching phrase wins: an unsubscribe request outranks everything said around it, a redirect to
 * someone else outranks a polite "not interested", and every negative rule runs before the positive
 * ones, whose phrases the negatives contain ("not interested", "kein Interesse", "pas intéressé",
 * "no me interesa"). No match: no suggestion (null), the SDR decides.
 *
 * Automatic replies recognised by their headers (channels/inbound-mail.ts autoReplyReason) never get
 * here: they are not replies. `out_of_office` is for what a person writes ("I'm on leave until the
 * 12th") and for autoresponders that send no header saying so.
 */
import type { ReplyLabel } from '../model/index.ts';
import { withoutQuotedHistory } from './quoted.ts';

export type Lang = 'en' | 'de' | 'fr' | 'es';
export type LabelRule = { label: ReplyLabel; lang: Lang; phrase: RegExp };
export type LabelSuggestion = { label: ReplyLabel; lang: Lang; matched: string };

/** The order labels are tried in (see the file comment); `other` is only ever chosen by a person. */
export const PRIORITY: readonly ReplyLabel[] = ['unsubscribe', 'wrong_person', 'out_of_office', 'not_interested', 'interested'];

const DAY_EN = '(monday|tuesday|wednesday|thursday|friday|tomorrow|next week)';
const DAY_DE = '(montag|dienstag|mittwoch|donnerstag|freitag|morgen|nachste woche)';
const DAY_FR = '(lundi|mardi|mercredi|jeudi|vendredi|demain|la semaine prochaine)';
const DAY_ES = '(lunes|martes|miercoles|jueves|viernes|manana|la semana que viene|la proxima semana)';

const r = (label: ReplyLabel, lang: Lang, phrases: readonly string[]): LabelRule[] => phrases.map((p) => ({ label, lang, phrase: new RegExp(p) }));

/** Phrases over folded text (see fold); each a regular expression source. */
export const LABEL_RULES: readonly LabelRule[] = [
  ...r('unsubscribe', 'en', [
    '\\bunsubscribe\\b',
    '\\bopt(ing)? out\\b',
    '\\bremove (me|my (email|address|details)) from (your|this|the|all) ([a-z-]+ )?(list|lists|database|distribution|sequence|outreach)',
    '\\btake me off (your|this|the) ([a-z-]+ )?list',
    '\\b(stop|quit) (emailing|e-mailing|contacting|messaging|writing to|spamming) me',
    "\\b(do not|don't|dont|never) (email|e-mail|contact|message|write to) me (again|anymore|any more|in the future)",
    '\\bno (more|further) (emails|e-mails|messages) (please|to this address)',
  ]),
  ...r('unsubscribe', 'de', [
    '\\babmelden\\b',
    '\\babmeldung\\b',
    '\\b(austragen|ausgetragen)\\b',
    '\\baus (ihrem|deinem|dem|eurem|ihren) (e-?mail-?)?verteiler',
    '\\b(keine|nicht mehr) (weiteren |weitere )?(e-?mails|mails|nachrichten|werbung)( mehr)?\\b',
    '\\b(kontaktieren|schreiben|anschreiben) sie mich (bitte )?nicht mehr',
    '\\bnicht (mehr|weiter) (kontaktieren|anschreiben|anzuschreiben|zu kontaktieren)',
    '\\b(loschen|entfernen) sie (bitte )?(mich|meine (daten|adresse|e-?mail-?adresse|kontaktdaten))',
  ]),
  ...r('unsubscribe', 'fr', [
    '\\bdesabonne(r|z|ment)?\\b',
    '\\bdesinscri(re|vez|ption|s|t)\\b',
    '\\b(retirez|supprimez|enlevez|effacez|rayez)[- ]moi de (votre|vos|la|cette) (liste|fichier|base|mailing)',
    '\\bne (me )?(contactez|ecrivez|relancez) plus\\b',
    '\\bne plus (me contacter|m\'ecrire|recevoir|me relancer)',
    "\\bne m'(ecrivez|envoyez|relancez) plus\\b",
    '\\bsupprime(r|z) (mon adresse|mes coordonnees|mes donnees)',
  ]),
  ...r('unsubscribe', 'es', [
    '\\bde baja\\b',
    '\\b(eliminen|elimine|eliminad|elimina|borren|borre|quiten|quite|saquen|saque)(me)? de (su|tu|la|vuestra|esta) (lista|base|listado)',
    '\\bno (me )?(contacten|contacte|contactes|escriban|escriba|escribas|envien|envie) mas\\b',
    '\\bno (vuelva|vuelvan|vuelvas) a (contactarme|escribirme|enviarme)',
    '\\b(desuscribir|desuscribirme|desuscribanme|darme de baja)\\b',
    '\\bcancelar (la |mi )?suscripcion\\b',
  ]),

  ...r('wrong_person', 'en', [
    '\\b(not|no longer) the (right|correct|best|appropriate|relevant) (person|contact|one)\\b',
    '\\bwrong (person|contact|department)\\b',
    "\\b(i'm|i am) not (responsible for|in charge of|the decision maker|involved in)",
    '\\bno longer (work|working|employed|based) (at|for|with|in)\\b',
    "\\b(i've|i have|i) (left|moved on from) (the company|the firm|the business|[a-z]+ in)",
    "\\b(you should|you'll want to|you may want to|you might want to|better to) (reach out to|contact|speak to|speak with|talk to|get in touch with) (?!me\\b|us\\b)",
    // "Please contact my assistant to book a time" is a yes; "please reach out to Jane" a redirect.
    '\\b(please|kindly) (reach out to|get in touch with) (?!me\\b|us\\b)',
    '\\b(is|would be) (the )?(right|better|best) (person|contact) (for|to)\\b',
    '\\b(forwarding|forwarded|passing|passed) (this|your (email|message|note)) (on )?to\\b',
  ]),
  ...r('wrong_person', 'de', [
    '\\bnicht (der|die) (richtige|passende|zustandige|korrekte) (ansprechpartner|ansprechpartnerin|person|kontakt)',
    '\\b(bin|ist) (dafur |hierfur )?nicht zustandig',
    '\\bnicht mehr (bei|fur|im unternehmen|in der firma|im haus)\\b',
    '\\b(das unternehmen|die firma) verlassen\\b',
    '\\b(wenden sie sich|wende dich|melden sie sich) (bitte |gerne )?(an|bei) (?!mich\\b|uns\\b)',
    '\\b(richtige|zustandige|passende) (ansprechpartner|ansprechpartnerin|person) (ist|ware|dafur)',
    '\\b(leite|habe) (ihre (nachricht|e-?mail|anfrage)|das) (an .{1,60} )?weiter(geleitet)?',
  ]),
  ...r('wrong_person', 'fr', [
    '\\bpas (la bonne personne|le bon interlocuteur|le bon contact|la personne en charge)',
    "\\b(ne suis|n'est) pas (en charge|responsable|concerne)",
    '\\bne (travaille|suis) plus (chez|dans|au sein|pour)\\b',
    "\\b(a|ai) quitte (l'entreprise|la societe|le groupe|la boite)",
    "\\b(contactez|adressez-vous a|ecrivez a|voyez avec|rapprochez-vous de) (?!moi\\b|nous\\b)",
    '\\bla bonne personne (est|serait|pour)\\b',
    "\\bje ne m'occupe (pas|plus) (de|du|des)\\b",
    '\\b(je transfere|j\'ai transfere|je transmets) (votre (message|mail|e-mail|demande)|a)',
  ]),
  ...r('wrong_person', 'es', [
    '\\bno soy (la persona|el contacto|quien) (adecuad[oa]|indicad[oa]|correct[oa]|responsable|que busca)',
    '\\bno soy (el|la) (responsable|encargad[oa])\\b',
    '\\bya no (trabajo|estoy|formo parte) (en|con|de)\\b',
    '\\b(dejo|deje|ha dejado|he dejado) (la empresa|la compania)\\b',
    '\\bno (me encargo|llevo (este|ese) tema)\\b',
    '\\b(contacte|contacta|contacten|hable|habla|escriba|escribe|dirijase) (con|a) (?!mi\\b|nosotros\\b)',
    '\\bla persona (adecuada|indicada|correcta|responsable) (es|seria|para)\\b',
    '\\b(reenvio|he reenviado|reenviare) (su|tu) (mensaje|correo|email)',
  ]),

  ...r('out_of_office', 'en', [
    '\\bout of (the )?office\\b',
    '\\booo\\b',
    '\\bon (annual |parental |maternity |paternity |sick |medical |extended )?(leave|vacation|holiday|holidays|pto|sabbatical)\\b',
    '\\baway from (the|my) (office|desk)\\b',
    '\\blimited (access to|availability on|access to my) (my )?(e-?mail|inbox)',
    "\\b(i am|i'm|i will be|i'll be) (currently )?(away|travell?ing|out|off) (until|till|through)\\b",
    '\\b(returning|return|back in the office|back at my desk) on\\b',
  ]),
  ...r('out_of_office', 'de', [
    '\\bnicht im (buro|haus|office)\\b',
    '\\babwesend\\b',
    '\\babwesenheit\\b',
    '\\b(im|in den|meinem) (urlaub|ferien)\\b',
    '\\b(auf dienstreise|in elternzeit|in mutterschutz)\\b',
    '\\bwieder (im buro|erreichbar|im haus|zuruck)\\b',
    '\\beingeschrankt erreichbar\\b',
  ]),
  ...r('out_of_office', 'fr', [
    '\\babsente? (du bureau|jusqu|a partir|le|ce|cette)\\b',
    '\\ben (conge|conges|vacances|deplacement|arret maladie)\\b',
    '\\b(de retour|je serai de retour|je reviens|retour prevu) (le|a partir|lundi|mardi|mercredi|jeudi|vendredi|au bureau)\\b',
    '\\bacces limite (a mes|aux|a ma) (e-?mails|courriels|messages|messagerie)',
  ]),
  ...r('out_of_office', 'es', [
    '\\bfuera de la oficina\\b',
    '\\b(estoy|estare|me encuentro) (de vacaciones|fuera|ausente|de viaje|de baja medica|de permiso)\\b',
    '\\bde vacaciones\\b',
    '\\bausente\\b',
    '\\b(estare de vuelta|estare de regreso|regreso el|volvere el|de regreso el)\\b',
    '\\bacceso limitado (al|a mi) correo\\b',
  ]),

  ...r('not_interested', 'en', [
    '\\bnot (really |currently |at all |that |very )?interested\\b',
    '\\bno interest\\b',
    '\\bno,? thanks?( you)?\\b',
    "\\b(we're|we are|i'm|i am) (all set|good for now|covered|happy with (our|my|the) current)",
    '\\balready (have|use|using|work with|working with|signed with|in a contract)\\b',
    '\\bnot (a (good |great )?fit|relevant|a priority|for us|for me|something we need)\\b',
    '\\bnot (right )?now\\b',
    '\\bnot at (this|the) (time|moment)\\b',
    "\\b(we|i) (don't|do not|won't|will not) need\\b",
    "\\b(we'll|we will|i'll|i will) pass\\b",
    '\\bno budget\\b',
    '\\b(reach|circle|check) (out|back)( again)? (next|in) (quarter|year|month|q[1-4]|6 months|a few months)\\b',
  ]),
  ...r('not_interested', 'de', [
    '\\bkein(en)? (interesse|bedarf|budget)\\b',
    '\\bnicht (daran |so )?interessiert\\b',
    '\\bnein,? danke\\b',
    '\\b(haben|nutzen|verwenden|arbeiten) (bereits|schon) (mit )?(eine|einen|ein|unsere)',
    '\\b(derzeit|aktuell|momentan|jetzt|im moment) (leider )?(nicht|kein)\\b',
    '\\bnicht (jetzt|im moment|derzeit|aktuell)\\b',
    '\\bpasst (derzeit |aktuell |leider )?nicht\\b',
    '\\b(kein|nicht) thema\\b',
  ]),
  ...r('not_interested', 'fr', [
    '\\bpas (du tout |vraiment )?interesse(e|s|es)?\\b',
    "\\b(ca|cela) ne (m|nous)'interesse pas\\b",
    '\\bnon,? merci\\b',
    '\\bpas (besoin|pour (le moment|l\'instant|nous|moi)|le bon moment|prioritaire|notre priorite)\\b',
    '\\b(avons|ai) deja (un|une|nos|notre|mon|ma)\\b',
    '\\bpas de (budget|besoin)\\b',
  ]),
  ...r('not_interested', 'es', [
    '\\bno (me|nos) interesa\\b',
    '\\bno (estoy|estamos) (interesad[oa]s?)\\b',
    '\\bno,? gracias\\b',
    '\\bno (lo |la )?necesit(o|amos)\\b',
    '\\bya (tenemos|contamos con|usamos|trabajamos con)\\b',
    '\\b(ahora|por ahora|de momento|en este momento|por el momento) no\\b',
    '\\bno es (el )?(buen )?momento\\b',
    '\\bsin presupuesto\\b',
  ]),

  ...r('interested', 'en', [
    '\\binterested\\b',
    '\\bsounds (good|great|interesting|promising|useful|relevant)\\b',
    '\\b(happy|glad|keen|open|eager) to (chat|talk|connect|learn|hear|meet|jump on|hop on|discuss|take a look|find a time)\\b',
    "\\b(let's|lets|let us|can we|could we|shall we) (set up|schedule|book|have|jump on|hop on|find|grab|do)\\b",
    '\\b(send|share) (me |over )?(a |your |the )?(calendar|calendly|booking|meeting|scheduling) link\\b',
    '\\b(send|share) (me |over )?(some |more |a bit more )?(info|information|details|deck|pricing|case studies)\\b',
    '\\btell me more\\b',
    "\\b(i'd|i would|we'd|we would) (like|love) to (learn|hear|know|see|chat|talk|meet)\\b",
    `\\b(do you have|are you free|how about|what about|works for me|would) .{0,30}${DAY_EN}`,
    '\\bgood timing\\b',
    '\\b(book|schedule) a (call|meeting|demo|time)\\b',
    '^(yes|sure|absolutely|definitely)\\b',
  ]),
  ...r('interested', 'de', [
    '\\binteressiert\\b',
    '\\binteressant\\b',
    '\\b(klingt|hort sich) (gut|interessant|spannend|vielversprechend)',
    '\\bgerne?\\b',
    '\\b(lassen sie|lass) uns (telefonieren|sprechen|reden|austauschen|treffen)',
    '\\b(termin|telefonat|gesprach|call|demo) (vereinbaren|ausmachen|machen|einplanen)',
    '\\bmehr (informationen|infos|details|unterlagen)\\b',
    `\\b(passt|geht) (mir |es |uns )?(am |bei mir )?${DAY_DE}`,
    '\\bschicken sie mir\\b',
  ]),
  ...r('interested', 'fr', [
    '\\binteresse(e|s|es)?\\b',
    "\\b(ca|cela) (m|nous)'interesse\\b",
    '\\bavec plaisir\\b',
    '\\bvolontiers\\b',
    '\\b(un|d\'un|notre) (appel|rendez-vous|rdv|echange|call|demo|visio)\\b',
    '\\bplus d\'(informations|infos|details)\\b',
    '\\b(envoyez|envoie)[- ]moi\\b',
    `\\b(disponible|dispo|libre) (ce |le )?${DAY_FR}`,
    '\\b(ca tombe bien|bonne idee|bon timing)\\b',
  ]),
  ...r('interested', 'es', [
    '\\b(me|nos) interesa\\b',
    '\\binteresad[oa]s?\\b',
    '\\bsuena (bien|interesante|genial|muy bien)\\b',
    '\\bcon (mucho )?gusto\\b',
    '\\b(una|la) (llamada|reunion|demo|videollamada|cita)\\b',
    '\\bmas (informacion|info|detalles)\\b',
    '\\b(enviame|envieme|mandame|mandeme)\\b',
    `\\b(el|este|el proximo) ${DAY_ES}`,
    '\\bbuen momento\\b',
  ]),
];

/** Lower case, accents dropped, ß as ss, one kind of apostrophe and space: what the rules read. */
export function fold(text: string): string {
  return text
    .toLowerCase()
    .replace(/ß/g, 'ss')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[\u2018\u2019\u02bc`´]/g, "'")
    .replace(/[\u2010-\u2015]/g, '-')
    .replace(/\s+/g, ' ')
    .trim();
}

const BY_LABEL = new Map<ReplyLabel, LabelRule[]>(PRIORITY.map((l) => [l, LABEL_RULES.filter((x) => x.label === l)]));

/** The suggested label of a reply's text with the rule that matched, or null when none does. */
export function suggestReplyLabel(text: string): LabelSuggestion | null {
  const folded = fold(withoutQuotedHistory(text));
  if (!folded) return null;
  for (const label of PRIORITY) {
    for (const rule of BY_LABEL.get(label) ?? []) {
      const m = rule.phrase.exec(folded);
      if (m) return { label, lang: rule.lang, matched: m[0].trim() };
    }
  }
  return null;
}

/** A reply's label as counted and filtered: the one a person confirmed, else the suggestion. */
export const labelOf = (m: { replyLabel?: ReplyLabel | null; replyLabelSuggested?: ReplyLabel | null }): ReplyLabel | null =>
  m.replyLabel ?? m.replyLabelSuggested ?? null;
