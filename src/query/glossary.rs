//! Portuguese words of a code question in English. Agents ask in English and Portuguese,
//! but most code, and the embedded model, are English: `como os números racionais são
//! simplificados` finds `Rational` only when searched with `numbers rational simplify`.
//!
//! A question counts as Portuguese when it has a letter only Portuguese writes, or two of
//! its small words (`MARKERS`: one alone may be English, `the os module`); an English
//! question is never changed.
//! Each of its words found in `GLOSSARY` — as written, or once a plural, feminine or verb
//! ending is taken back to the dictionary form — adds its English rendering. The words
//! themselves stay: Portuguese code and docstrings match them.

/// Small words of Portuguese questions (folded), rare in English ones. `é` and `à` are
/// markers as written (`e` and `a` are not).
const MARKERS: &[&str] = &[
    "ao", "aos", "com", "como", "da", "das", "dos", "ela", "ele", "em", "entre", "essa", "esse",
    "esta", "este", "isso", "mas", "na", "nas", "nos", "nao", "onde", "os", "ou", "para", "pela",
    "pelo", "por", "porque", "quais", "qual", "quando", "que", "quem", "sao", "sem", "sobre",
    "uma",
];

/// Dictionary forms (accents folded: `funcao`, not `função`) and their English renderings,
/// sorted by the Portuguese word (`lookup` searches it). Programming, data and the
/// mathematics of code bases.
const GLOSSARY: &[(&str, &str)] = &[
    ("abrir", "open"),
    ("acesso", "access"),
    ("adicionar", "add"),
    ("aleatorio", "random"),
    ("algoritmo", "algorithm"),
    ("analisador", "parser"),
    ("analisar", "parse"),
    ("apagar", "delete"),
    ("aplicar", "apply"),
    ("aresta", "edge"),
    ("argumento", "argument"),
    ("armazenar", "store"),
    ("arquivo", "file"),
    ("arredondar", "round"),
    ("arvore", "tree"),
    ("assinatura", "signature"),
    ("atributo", "attribute"),
    ("atualizacao", "update"),
    ("atualizar", "update"),
    ("autenticacao", "authentication"),
    ("avaliacao", "evaluation"),
    ("avaliar", "evaluate"),
    ("aviso", "warning"),
    ("banco", "database"),
    ("biblioteca", "library"),
    ("binario", "binary"),
    ("buscar", "search"),
    ("cabecalho", "header"),
    ("cadeia", "string"),
    ("calcular", "compute"),
    ("calculo", "calculation"),
    ("caminho", "path"),
    ("campo", "field"),
    ("carregar", "load"),
    ("chamada", "call"),
    ("chamador", "caller"),
    ("chamar", "call"),
    ("chave", "key"),
    ("classe", "class"),
    ("coeficiente", "coefficient"),
    ("coluna", "column"),
    ("comando", "command"),
    ("comentario", "comment"),
    ("comparar", "compare"),
    ("compilar", "compile"),
    ("complexo", "complex"),
    ("conexao", "connection"),
    ("configuracao", "configuration"),
    ("conjunto", "set"),
    ("constante", "constant"),
    ("construir", "build"),
    ("consulta", "query"),
    ("conversao", "conversion"),
    ("converter", "convert"),
    ("copiar", "copy"),
    ("criar", "create"),
    ("dado", "data"),
    ("decidir", "decide"),
    ("declarar", "declare"),
    ("definicao", "definition"),
    ("definir", "define"),
    ("dependencia", "dependency"),
    ("derivada", "derivative"),
    ("derivar", "differentiate"),
    ("desconto", "discount"),
    ("desenhar", "draw"),
    ("detectar", "detect"),
    ("diretorio", "directory"),
    ("dividir", "divide"),
    ("divisao", "division"),
    ("documentacao", "documentation"),
    ("entrada", "input"),
    ("enviar", "send"),
    ("equacao", "equation"),
    ("erro", "error"),
    ("escrever", "write"),
    ("esquema", "schema"),
    ("evento", "event"),
    ("excecao", "exception"),
    ("excluir", "delete"),
    ("executar", "execute"),
    ("expandir", "expand"),
    ("expressao", "expression"),
    ("falha", "failure"),
    ("fatorar", "factor"),
    ("fechar", "close"),
    ("fila", "queue"),
    ("filho", "child"),
    ("filtrar", "filter"),
    ("filtro", "filter"),
    ("formatar", "format"),
    ("formato", "format"),
    ("fracao", "fraction"),
    ("funcao", "function"),
    ("gerar", "generate"),
    ("grafico", "plot"),
    ("grafo", "graph"),
    ("gravar", "write"),
    ("heranca", "inheritance"),
    ("herdar", "inherit"),
    ("igualdade", "equality"),
    ("imagem", "image"),
    ("implementacao", "implementation"),
    ("implementar", "implement"),
    ("importar", "import"),
    ("imprimir", "print"),
    ("indice", "index"),
    ("inicializar", "initialize"),
    ("iniciar", "start"),
    ("inserir", "insert"),
    ("integracao", "integration"),
    ("integrar", "integrate"),
    ("inteiro", "integer"),
    ("lancar", "raise"),
    ("ler", "read"),
    ("limite", "limit"),
    ("linha", "line"),
    ("lista", "list"),
    ("matriz", "matrix"),
    ("memoria", "memory"),
    ("mensagem", "message"),
    ("metodo", "method"),
    ("modelo", "model"),
    ("modulo", "module"),
    ("mostrar", "show"),
    ("multiplicacao", "multiplication"),
    ("multiplicar", "multiply"),
    ("numero", "number"),
    ("objeto", "object"),
    ("opcao", "option"),
    ("ordenar", "sort"),
    ("pacote", "package"),
    ("pagamento", "payment"),
    ("pagina", "page"),
    ("parametro", "parameter"),
    ("pasta", "folder"),
    ("pesquisa", "search"),
    ("polinomio", "polynomial"),
    ("potencia", "power"),
    ("preco", "price"),
    ("primo", "prime"),
    ("processar", "process"),
    ("processo", "process"),
    ("procurar", "find"),
    ("propriedade", "property"),
    ("racional", "rational"),
    ("raiz", "root"),
    ("receber", "receive"),
    ("registrar", "register"),
    ("registro", "record"),
    ("remover", "remove"),
    ("renderizar", "render"),
    ("requisicao", "request"),
    ("resolver", "solve"),
    ("resposta", "response"),
    ("resultado", "result"),
    ("retornar", "return"),
    ("retorno", "return"),
    ("rodar", "run"),
    ("rota", "route"),
    ("saida", "output"),
    ("salvar", "save"),
    ("senha", "password"),
    ("serie", "series"),
    ("servidor", "server"),
    ("sessao", "session"),
    ("simbolico", "symbolic"),
    ("simbolo", "symbol"),
    ("simplificacao", "simplification"),
    ("simplificar", "simplify"),
    ("sobrescrever", "override"),
    ("solucao", "solution"),
    ("soma", "sum"),
    ("somar", "add"),
    ("substituicao", "substitution"),
    ("substituir", "substitute"),
    ("subtrair", "subtract"),
    ("tabela", "table"),
    ("tarefa", "task"),
    ("testar", "test"),
    ("teste", "test"),
    ("texto", "text"),
    ("tipo", "type"),
    ("tratamento", "handling"),
    ("tratar", "handle"),
    ("usuario", "user"),
    ("validacao", "validation"),
    ("validar", "validate"),
    ("valor", "value"),
    ("variavel", "variable"),
    ("verificar", "check"),
    ("versao", "version"),
    ("vetor", "vector"),
];

/// `text` in lower case with the accents of Portuguese taken off (`números` → `numeros`).
fn folded(text: &str) -> String {
    text.chars()
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            'á' | 'à' | 'â' | 'ã' => 'a',
            'é' | 'ê' => 'e',
            'í' => 'i',
            'ó' | 'ô' | 'õ' => 'o',
            'ú' | 'ü' => 'u',
            'ç' => 'c',
            other => other,
        })
        .collect()
}

/// A letter only Portuguese writes (of the two languages asked in).
fn has_portuguese_letter(word: &str) -> bool {
    word.chars().any(|c| {
        matches!(
            c.to_lowercase().next(),
            Some('ã' | 'õ' | 'ç' | 'â' | 'ê' | 'ô')
        )
    })
}

/// Question words and forms no English text writes: one of them with a word of the
/// glossary marks a question typed without accents (`como o sympy calcula a derivada`).
const STRONG_MARKERS: &[&str] = &[
    "como", "essa", "esse", "isso", "nao", "onde", "pela", "pelo", "porque", "quais", "qual",
    "quando", "quem", "sao", "sobre", "uma",
];

/// Whether `words` read as a Portuguese question: a letter only Portuguese writes, two
/// small words of it, or one question word of it and a word of the glossary.
fn is_portuguese(words: &[&str]) -> bool {
    let bare = |word: &str| {
        word.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    let marker = |word: &str| {
        let word = bare(word);
        matches!(word.as_str(), "é" | "à" | "às") || MARKERS.contains(&folded(&word).as_str())
    };
    let strong = |word: &str| STRONG_MARKERS.contains(&folded(&bare(word)).as_str());
    let in_glossary = |word: &str| {
        let word = folded(&bare(word));
        word.chars().count() >= 3 && forms(&word).iter().any(|form| lookup(form).is_some())
    };
    words.iter().any(|w| has_portuguese_letter(w))
        || words.iter().filter(|w| marker(w)).count() >= 2
        || (words.iter().any(|w| strong(w)) && words.iter().any(|w| in_glossary(w)))
}

fn lookup(form: &str) -> Option<&'static str> {
    GLOSSARY
        .binary_search_by(|(pt, _)| (*pt).cmp(form))
        .ok()
        .map(|at| GLOSSARY[at].1)
}

/// The dictionary forms `word` (folded) may be an inflection of, most likely first: the
/// word itself, its singular, its masculine, and the infinitive of a participle, gerund
/// or present tense.
fn forms(word: &str) -> Vec<String> {
    let mut out = vec![word.to_string()];
    // Plural → singular: `racionais` → `racional`, `funcoes` → `funcao`, `numeros` → `numero`.
    let singular = [
        ("oes", "ao"),
        ("aes", "ao"),
        ("ais", "al"),
        ("eis", "el"),
        ("ois", "ol"),
        ("uis", "ul"),
        ("ns", "m"),
        ("res", "r"),
        ("zes", "z"),
        ("s", ""),
    ]
    .iter()
    .find_map(|(plural, one)| word.strip_suffix(plural).map(|stem| format!("{stem}{one}")));
    let singular = singular.unwrap_or_else(|| word.to_string());
    out.push(singular.clone());
    // Feminine → masculine: `simplificada` → `simplificado`.
    if let Some(stem) = singular.strip_suffix('a') {
        out.push(format!("{stem}o"));
    }
    // Participles, gerunds and the present: `simplificado`, `calculando`, `calcula` → `-ar`.
    let verb_endings: [(&str, &[&str]); 9] = [
        ("ado", &["ar"]),
        ("ada", &["ar"]),
        ("ido", &["er", "ir"]),
        ("ida", &["er", "ir"]),
        ("ando", &["ar"]),
        ("endo", &["er"]),
        ("indo", &["ir"]),
        ("am", &["ar"]),
        ("em", &["er", "ir"]),
    ];
    for (ending, infinitives) in verb_endings {
        if let Some(stem) = singular.strip_suffix(ending) {
            out.extend(infinitives.iter().map(|i| format!("{stem}{i}")));
        }
    }
    if let Some(stem) = singular.strip_suffix('a') {
        out.push(format!("{stem}ar"));
    }
    if let Some(stem) = singular.strip_suffix('e') {
        out.push(format!("{stem}er"));
        out.push(format!("{stem}ir"));
    }
    out
}

/// The English renderings of the words of a Portuguese question, each once, in the
/// question's order, but for those the question already has (so a question given its
/// renderings gains nothing more); none for a question in English.
pub fn english_for(words: &[&str]) -> Vec<&'static str> {
    if !is_portuguese(words) {
        return Vec::new();
    }
    let words: Vec<String> = words
        .iter()
        .map(|w| folded(w.trim_matches(|c: char| !c.is_alphanumeric())))
        .collect();
    let mut out: Vec<&'static str> = Vec::new();
    for word in &words {
        if word.chars().count() < 3 {
            continue;
        }
        let english = forms(word).iter().find_map(|form| lookup(form));
        if let Some(english) = english
            && !words.iter().any(|w| w == english)
            && !out.contains(&english)
        {
            out.push(english);
        }
    }
    out
}

/// The English rendering of one word of a Portuguese text (`aplicado` → `apply`), or
/// `None` for a text in English or a word the glossary does not have: what
/// `query::intent` reads a Portuguese question's words as when they spell names.
pub fn english_of_word(text: &str, word: &str) -> Option<&'static str> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if !is_portuguese(&words) {
        return None;
    }
    let word = folded(word.trim_matches(|c: char| !c.is_alphanumeric()));
    if word.chars().count() < 3 {
        return None;
    }
    forms(&word).iter().find_map(|form| lookup(form))
}

/// `text` with the English renderings of its words appended (`english_for`), or `None`
/// when it gains none: an English text, or one that already has them.
pub fn with_english(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let english = english_for(&words);
    (!english.is_empty()).then(|| {
        let mut extended = words.join(" ");
        for word in english {
            extended.push(' ');
            extended.push_str(word);
        }
        extended
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn english(question: &str) -> Vec<&'static str> {
        english_for(&question.split_whitespace().collect::<Vec<_>>())
    }

    #[test]
    fn a_text_gains_its_english_once_and_an_english_text_nothing() {
        let extended = with_english("onde  o arquivo é carregado").expect("Portuguese");
        assert_eq!(extended, "onde o arquivo é carregado file load");
        assert_eq!(with_english(&extended), None, "already has its English");
        assert_eq!(with_english("where is the file loaded"), None);
        assert_eq!(with_english(""), None);
    }

    #[test]
    fn the_glossary_is_sorted_and_folded() {
        assert!(
            GLOSSARY.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted, no repeats"
        );
        for (pt, _) in GLOSSARY {
            assert_eq!(folded(pt), *pt, "{pt} is written folded");
        }
        for marker in MARKERS.iter().chain(STRONG_MARKERS) {
            assert_eq!(folded(marker), *marker, "{marker} is written folded");
        }
    }

    #[test]
    fn a_portuguese_question_gains_its_english_words() {
        assert_eq!(
            english("como os números racionais são simplificados"),
            ["number", "rational", "simplify"]
        );
        assert_eq!(
            english("onde as funções de derivada são chamadas?"),
            ["function", "derivative", "call"]
        );
        assert_eq!(
            english("quem chama o método de validação"),
            ["call", "method", "validation"]
        );
        assert_eq!(
            english("onde o arquivo de configuração é lido"),
            ["file", "configuration", "read"]
        );
        // Typed without accents: a question word and a word of the glossary.
        assert_eq!(
            english("como o sympy calcula a derivada?"),
            ["calculation", "derivative"]
        );
        assert_eq!(
            english("onde o ripgrep detecta arquivos binarios?"),
            ["detect", "file", "binary"]
        );
    }

    #[test]
    fn an_english_question_is_left_as_it_is() {
        // `data`, `limite`-like and `total` words are English too: nothing marks these
        // questions as Portuguese, so nothing is added.
        assert!(english("how are rational numbers simplified").is_empty());
        assert!(english("where is the data loaded from the cache").is_empty());
        assert!(english("Add.flatten").is_empty());
        // One small word that Portuguese has too is not enough.
        assert!(english("where is the os module imported from").is_empty());
        assert!(english("o que Basic.subs chama").is_empty());
    }

    #[test]
    fn a_question_given_its_renderings_gains_nothing_more() {
        let question = "como os números racionais são simplificados";
        let once = english(question);
        let again = english(&format!("{question} {}", once.join(" ")));
        assert!(again.is_empty(), "{again:?}");
    }

    proptest::proptest! {
        #[test]
        fn any_words_are_read_without_panic_and_each_rendering_once(
            words in proptest::collection::vec("[a-zãõçáéíóúâêô]{0,14}|\\PC{0,8}", 0..12)
        ) {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let english = english_for(&words);
            for (i, word) in english.iter().enumerate() {
                proptest::prop_assert!(!english[..i].contains(word));
            }
        }

        #[test]
        fn words_of_english_letters_without_a_marker_gain_nothing(
            words in proptest::collection::vec("[a-z]{1,12}", 0..12)
        ) {
            let words: Vec<&str> = words
                .iter()
                .map(String::as_str)
                .filter(|w| !MARKERS.contains(w))
                .collect();
            proptest::prop_assert!(english_for(&words).is_empty());
        }
    }

    #[test]
    fn each_english_word_is_added_once() {
        assert_eq!(
            english("onde a função chama outra função"),
            ["function", "call"]
        );
        // A word no dictionary form of which is known adds nothing (`total`, `outra`).
        assert_eq!(english("como o total é calculado"), ["compute"]);
    }
}
