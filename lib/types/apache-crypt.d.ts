// apache-crypt ships no types: crypt(3) DES, `(password, salt or stored hash) => hash`.
declare module 'apache-crypt' {
  function crypt(password: string, salt?: string): string;
  export default crypt;
}
