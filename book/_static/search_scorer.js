// The search page's ranking: a chapter whose title holds the searched word comes first.
//
// Sphinx (html_search_scorer in _config.yml) puts this file into
// _static/language_data.js, after searchtools.js has set its own Scorer; this
// one takes its place.  Sphinx indexes the words of every heading of a page
// as "title" words, so a page with a section called "Entropy" scores as high
// as the chapter called "Entropy invariance" (Scorer.title, 15), and pages of
// equal score are listed by title, as strings: "19. Evidence..." before
// "7. Entropy...".  For "entropy" the chapter came seventh.
//
// Here a page whose own title (the h1) holds a searched word gains
// Scorer.title once more, and a chapter of the main text one point more
// than an evidence appendix or the API reference whose titles hold the word
// too: the chapter explains, the appendix and the reference follow it.
// Sections and API objects (a result with an anchor) keep Sphinx's score.
// tests/test_browser.py (test_search_ranks_the_chapter_first) holds it.
var Scorer = {
  // Sphinx's own weights (searchtools.js of Sphinx 7.4), unchanged.
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,

  // Pages that support a chapter rather than explain: the evidence appendices and the API reference.
  supporting: /^book\/(evidence-[^/]*|api)$/,

  // The searched words, stemmed as Sphinx stems them (the query is the page's ?q=).
  searchedStems: () => {
    const query = new URLSearchParams(window.location.search).get("q") || "";
    const stemmer = new Stemmer();
    return splitQuery(query.toLowerCase())
      .filter((word) => word && word[0] !== "-" && !stopwords.includes(word) && !/^\d+$/.test(word))
      .map((word) => stemmer.stemWord(word));
  },

  // [docname, title, anchor, description, score, filename] -> the score to rank by.
  score: (result) => {
    const [docname, title, anchor, , score] = result;
    if (anchor || !title) return score; // a section or an object: Sphinx's score
    const stemmer = new Stemmer();
    const own = new Set(splitQuery(title.toLowerCase()).map((word) => stemmer.stemWord(word)));
    if (!Scorer.searchedStems().some((stem) => own.has(stem))) return score;
    return score + Scorer.title + (Scorer.supporting.test(docname) ? 0 : 1);
  },
};
